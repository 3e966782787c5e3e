/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The schema of every config file: which keys exist, their types, ranges and allowed values, and in which
 * files they may appear. Validation, the channel-over-global merge and the project merge all walk it. */

#include <json-c/json.h>
#include <stdint.h>

#include "config.h"

typedef enum FieldType {
        FIELD_STRING,
        FIELD_BOOL,
        FIELD_UINT,
        FIELD_DOUBLE,
        FIELD_STRV,             /* array of strings */
        FIELD_OBJECT,           /* nested object with its own schema */
        FIELD_MAP,              /* object of NAME -> object with the sub schema (mcp.servers) */
        FIELD_ENV_MAP,          /* object of VARIABLE -> any scalar JSON value (envs) */
        FIELD_ARRAY,            /* array of objects with the sub schema (rules) */
        FIELD_DECISION,         /* "allow" | "deny" | "approve" */
        FIELD_UINTV,            /* array of integers in min..max (egress rule ports) */
} FieldType;

/* Where a field may appear. */
typedef enum FieldScope {
        SCOPE_GLOBAL  = 1 << 0,
        SCOPE_CHANNEL = 1 << 1,
        SCOPE_PROJECT = 1 << 2,
        SCOPE_ALL     = SCOPE_GLOBAL | SCOPE_CHANNEL | SCOPE_PROJECT,
        SCOPE_CONFIG  = SCOPE_GLOBAL | SCOPE_CHANNEL,
} FieldScope;

typedef struct Schema Schema;

/* An extra check of a string value (each element, for FIELD_STRV); returns a static reason or NULL. */
typedef const char *(*StringCheck)(const char *value);

typedef struct Field {
        const char *key;
        FieldType type;
        unsigned scope;
        const Schema *sub;
        uint64_t min, max;      /* FIELD_UINT */
        double dmin, dmax;      /* FIELD_DOUBLE */
        StringCheck check;      /* FIELD_STRING, FIELD_STRV */
        bool required;          /* inside FIELD_ARRAY / FIELD_MAP elements */
        bool secret;            /* never echo the value */
} Field;

struct Schema {
        const char *name;
        const Field *fields;
        size_t n_fields;
};

extern const Schema config_schema_root;

const Field *schema_find(const Schema *s, const char *key);

/* Validates obj against schema. file names the file in problems; scope is the kind of file. Returns the
 * number of errors found (warnings are recorded, not counted), or -ENOMEM. */
int schema_validate(const Schema *s, json_object *obj, unsigned scope, const char *file, ConfigProblems *problems);

/* Deep copy of base with over merged in: objects merged key by key, maps and env maps merged by name,
 * everything else replaced. */
json_object *schema_merge(const Schema *s, json_object *base, json_object *over);

/* Turns validated JSON into the typed struct, filling defaults. channel may be NULL for the global config. */
int loop_config_from_json(json_object *obj, const char *channel, LoopConfig *ret);

/* Parses JSON text (comments allowed, trailing garbage not) into an object; a static reason on failure. */
int config_parse_text(const char *text, size_t size, json_object **ret, char **ret_reason);
