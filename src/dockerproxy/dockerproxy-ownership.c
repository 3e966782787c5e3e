/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Answers about other channels' objects, and the ids the proxy acts on (see the header). */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dockerproxy-ownership.h"
#include "json-util.h"
#include "macro.h"

const char *proxy_probe_path(ProxyObjectKind kind) {
        static const char * const paths[] = {
                [PROXY_OBJECT_CONTAINER] = "/containers/" PROXY_PROBE_REF "/json",
                [PROXY_OBJECT_EXEC] = "/exec/" PROXY_PROBE_REF "/json",
                [PROXY_OBJECT_VOLUME] = "/volumes/" PROXY_PROBE_REF,
                [PROXY_OBJECT_NETWORK] = "/networks/" PROXY_PROBE_REF,
        };
        return kind >= 0 && kind < _PROXY_OBJECT_KIND_MAX ? paths[kind] : NULL;
}

const char *proxy_not_found_fallback(ProxyObjectKind kind) {
        static const char * const words[] = {
                [PROXY_OBJECT_CONTAINER] = "{\"message\":\"No such container: " PROXY_PROBE_REF "\"}\n",
                [PROXY_OBJECT_EXEC] = "{\"message\":\"No such exec instance: " PROXY_PROBE_REF "\"}\n",
                [PROXY_OBJECT_VOLUME] = "{\"message\":\"get " PROXY_PROBE_REF ": no such volume\"}\n",
                [PROXY_OBJECT_NETWORK] = "{\"message\":\"network " PROXY_PROBE_REF " not found\"}\n",
        };
        return kind >= 0 && kind < _PROXY_OBJECT_KIND_MAX ? words[kind] : NULL;
}

bool proxy_not_found_is_template(const char *body) {
        _cleanup_(json_object_putp) json_object *o = NULL;

        if (!body || strlen(body) > PROXY_NOT_FOUND_MAX || !strstr(body, PROXY_PROBE_REF))
                return false;
        o = json_tokener_parse(body);
        return json_object_is_type(o, json_type_object);
}

bool proxy_ref_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 256 || s[0] == '.' || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_' || s[i] == '.' || s[i] == '-'))
                        return false;
        return true;
}

int proxy_not_found_format(const char *template, const char *ref, char **ret) {
        const size_t probe = strlen(PROXY_PROBE_REF);
        size_t n = 0;
        char *body, *o;

        if (!proxy_ref_is_valid(ref))
                return -EINVAL;
        for (const char *t = template; (t = strstr(t, PROXY_PROBE_REF)); t += probe)
                n++;
        body = malloc(strlen(template) + n * strlen(ref) + 1);
        if (!body)
                return -ENOMEM;
        o = body;
        for (const char *t = template;;) {
                const char *m = strstr(t, PROXY_PROBE_REF);
                if (!m) {
                        strcpy(o, t);
                        break;
                }
                o = stpcpy(mempcpy(o, t, (size_t) (m - t)), ref);
                t = m + probe;
        }
        *ret = body;
        return 0;
}

const char *proxy_inspect_id(ProxyObjectKind kind, json_object *inspect) {
        static const char * const keys[] = {
                [PROXY_OBJECT_CONTAINER] = "Id", [PROXY_OBJECT_EXEC] = "ID", [PROXY_OBJECT_VOLUME] = "Name",
                [PROXY_OBJECT_NETWORK] = "Id",
        };
        json_object *v = NULL;
        const char *id;

        if (kind < 0 || kind >= _PROXY_OBJECT_KIND_MAX || !json_object_object_get_ex(inspect, keys[kind], &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        id = json_object_get_string(v);
        return proxy_ref_is_valid(id) ? id : NULL;
}

#define PROXY_RESERVED_NAME_PREFIX "loop-"

const char *proxy_container_name_reserved(const char *method, const ProxyTarget *t) {
        const char *path = t->unversioned, *name, *rest = NULL, *slash;
        json_object *v;

        if (!streq(method, "POST") || !path)
                return NULL;
        if (strncasecmp(path, "/containers/", strlen("/containers/")) == 0)
                rest = path + strlen("/containers/");
        if (!rest)
                return NULL;
        slash = strchr(rest, '/');
        if (!(strcasecmp(rest, "create") == 0 || (slash && slash > rest && strcasecmp(slash, "/rename") == 0)))
                return NULL;
        v = proxy_query_get(t, "name", NULL);
        name = v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        if (!name)
                return NULL;
        name += strspn(name, "/");
        return strncasecmp(name, PROXY_RESERVED_NAME_PREFIX, strlen(PROXY_RESERVED_NAME_PREFIX)) == 0 ? name : NULL;
}
