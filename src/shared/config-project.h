/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* {work_dir}/.loop/config.json, the project's own config, merged over the channel's at run time. */

#include <json-c/json.h>

#include "config.h"

/* Merges a project config over base, with the project rules: lists replaced (mounts relative to work_dir),
 * envs and mcp.servers merged by key, scalar overrides, one auth field clearing the other, gates only
 * narrowed and project rules prepended; fields a project may not set are ignored with a warning. */
int config_apply_project_json(const LoopConfig *base, json_object *project, const char *project_path,
                              const char *work_dir, LoopConfig *ret, ConfigProblems *problems);
/* Reads {work_dir}/.loop/config.json (absent: a plain copy of base) and applies it. An unreadable or
 * invalid project file is an error: the caller must not run with a half-applied configuration. */
int config_apply_project(const LoopConfig *base, const char *work_dir, LoopConfig *ret, ConfigProblems *problems);
