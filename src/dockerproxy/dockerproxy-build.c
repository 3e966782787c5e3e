/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <json-c/json.h>
#include <zlib.h>

#include "dockerproxy-build.h"
#include "dockerproxy-image.h"
#include "json-util.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"
#include "tar.h"

/* A refusal with its sentence; -ENOMEM when even that cannot be written. */
_printf_(2, 3) static int refuse(char **ret_reason, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(ret_reason, fmt, ap);
        va_end(ap);
        if (k < 0) {
                *ret_reason = NULL;
                return -ENOMEM;
        }
        return -EPERM;
}

/* ---- names ---- */

/* a/./b//c -> a/b/c; NULL (errno EINVAL) for "..", an empty result or a control character */
static char *path_normalise(const char *s) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, len = strlen(s);

        if (len > TAR_READ_NAME_MAX) {
                errno = EINVAL;
                return NULL;
        }
        out = malloc(len + 1);
        if (!out)
                return NULL;
        for (const char *p = s; *p; ) {
                size_t l = strcspn(p, "/");
                if ((l == 1 && p[0] == '.') || l == 0)
                        ;
                else if (l == 2 && p[0] == '.' && p[1] == '.') {
                        errno = EINVAL;
                        return NULL;
                } else {
                        for (size_t i = 0; i < l; i++)
                                if ((unsigned char) p[i] < 0x20 || p[i] == 0x7f) {
                                        errno = EINVAL;
                                        return NULL;
                                }
                        if (n > 0)
                                out[n++] = '/';
                        memcpy(out + n, p, l);
                        n += l;
                }
                p += l;
                while (*p == '/')
                        p++;
        }
        if (n == 0) {
                errno = EINVAL;
                return NULL;
        }
        out[n] = 0;
        return TAKE_PTR(out);
}

int proxy_build_dockerfile_name(const char *param, char **ret) {
        char *n;

        if (isempty(param))
                param = "Dockerfile";
        if (param[0] == '[' || strstr(param, "://"))
                return -EINVAL;
        n = path_normalise(param);
        if (!n)
                return errno == ENOMEM ? -ENOMEM : -EINVAL;
        *ret = n;
        return 0;
}

/* ---- the Dockerfile ---- */

typedef struct Parser {
        const char *channel;
        char **stages;                  /* names given with AS (lower case), NULL for none */
        size_t n_stages;
        char **bases;                   /* images FROM names (not scratch, not a stage), as written */
        char escape;
        unsigned line;                  /* where the current instruction began */
} Parser;

static const char *skip_ws(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

/* The next whitespace-separated word of *p (moved past it); NULL at the end. */
static char *next_word(const char **p) {
        const char *s = skip_ws(*p), *e = s;
        if (!*s)
                return NULL;
        while (*e && *e != ' ' && *e != '\t')
                e++;
        *p = e;
        return strndup(s, (size_t) (e - s));
}

static bool has_heredoc(const char *args) {
        return strstr(args, "<<");
}

static int check_mount(Parser *ps, const char *v, char **ret_reason) {
        static const char * const keys[] = {
                "type", "target", "dst", "destination", "id", "mode", "uid", "gid", "required", "sharing", "size",
                "readonly", "ro", "rw", "readwrite", "env", "source", "src",
        };
        _cleanup_free_ char *copy = strdup(v);
        const char *type = "bind";
        bool source = false;

        if (!copy)
                return -ENOMEM;
        if (strpbrk(v, "\"'$") || isempty(v))
                return refuse(ret_reason, "line %u: RUN --mount=%s cannot be read (quotes and variables are refused)", ps->line, v);
        for (char *save = NULL, *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(f, '=');
                bool known = false;
                if (eq)
                        *eq = 0;
                for (char *c = f; *c; c++)
                        *c = (char) tolower((unsigned char) *c);
                if (streq(f, "from"))
                        return refuse(ret_reason, "line %u: RUN --mount with from= is refused (a mount of another stage's "
                                      "or image's files)", ps->line);
                for (size_t i = 0; i < ELEMENTSOF(keys) && !known; i++)
                        known = streq(f, keys[i]);
                if (!known)
                        return refuse(ret_reason, "line %u: RUN --mount option %s is refused (not one the proxy knows)", ps->line, f);
                if (streq(f, "type"))
                        type = eq ? eq + 1 : "";
                if (streq(f, "source") || streq(f, "src"))
                        source = true;
        }
        if ((strcasecmp(type, "tmpfs") == 0) || (strcasecmp(type, "secret") == 0) || (strcasecmp(type, "ssh") == 0)) {
                if (source)
                        return refuse(ret_reason, "line %u: RUN --mount type=%s with a source is refused", ps->line, type);
                return 0;
        }
        if ((strcasecmp(type, "cache") == 0))
                return 0;
        return refuse(ret_reason, "line %u: RUN --mount type=%s is refused (tmpfs, secret, ssh and cache only: a bind "
                      "mount's symlinks reach the host's files on an unpatched buildah)", ps->line, type);
}

/* A stage of this Dockerfile named so before the current FROM (FROM takes names, not indexes). */
static bool stage_known_any(Parser *ps, const char *v) {
        for (size_t k = 0; k < ps->n_stages; k++)
                if (ps->stages[k] && strcasecmp(ps->stages[k], v) == 0)
                        return true;
        return false;
}

/* An earlier stage of this Dockerfile, by its AS name or its index (the current stage is the last). */
static bool stage_known(Parser *ps, const char *v) {
        size_t earlier = ps->n_stages > 0 ? ps->n_stages - 1 : 0;

        if (v[0] >= '0' && v[0] <= '9') {
                char *end = NULL;
                errno = 0;
                unsigned long i = strtoul(v, &end, 10);
                return errno == 0 && end && !*end && i < earlier;
        }
        for (size_t k = 0; k < earlier; k++)
                if (ps->stages[k] && (strcasecmp(ps->stages[k], v) == 0))
                        return true;
        return false;
}

/* The flags at the start of args (moved past them); each checked by kind. */
static int check_flags(Parser *ps, const char *kw, const char **args, char **ret_reason) {
        for (;;) {
                const char *s = skip_ws(*args);
                if (!startswith(s, "--"))
                        return 0;
                _cleanup_free_ char *w = next_word(args);
                if (!w)
                        return -ENOMEM;
                char *name = w + 2, *eq = strchr(name, '=');
                const char *v = eq ? eq + 1 : NULL;
                if (eq)
                        *eq = 0;
                for (char *c = name; *c; c++)
                        *c = (char) tolower((unsigned char) *c);

                if (streq(kw, "RUN") && streq(name, "mount")) {
                        int r = check_mount(ps, strempty(v), ret_reason);
                        if (r < 0)
                                return r;
                } else if (streq(kw, "RUN") && streq(name, "network")) {
                        if (!v || !(streq(v, "none") || streq(v, "default")))
                                return refuse(ret_reason, "line %u: RUN --network=%s is refused (none or default only)",
                                              ps->line, strempty(v));
                } else if ((streq(kw, "ADD") || streq(kw, "COPY")) &&
                           (streq(name, "chown") || streq(name, "chmod") || streq(name, "link"))) {
                        /* ownership and modes of the copied files */
                } else if (streq(kw, "COPY") && streq(name, "from")) {
                        _cleanup_(proxy_image_ref_done) ProxyImageRef ref = {};
                        if (isempty(v) || strpbrk(v, "$\"'"))
                                return refuse(ret_reason, "line %u: COPY --from=%s cannot be read", ps->line, strempty(v));
                        if (stage_known(ps, v))
                                continue;
                        if (proxy_image_ref_is_channels(v, ps->channel))
                                continue;
                        return refuse(ret_reason, "line %u: COPY --from=%s is refused (an earlier stage of this Dockerfile "
                                      "or an image of the channel's own only)", ps->line, v);
                } else if (streq(kw, "FROM") && streq(name, "platform")) {
                        /* which variant of the base image */
                } else
                        return refuse(ret_reason, "line %u: %s --%s is refused (not a flag the proxy knows)", ps->line, kw, name);
        }
}

/* ADD's sources: the context's files only */
static int check_add_sources(Parser *ps, const char *args, char **ret_reason) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_free_ char *copy = NULL;
        const char *s = skip_ws(args);
        size_t n;

        if (s[0] == '[') {
                list = json_tokener_parse(s);
                if (!list || !json_object_is_type(list, json_type_array))
                        return refuse(ret_reason, "line %u: ADD's JSON form cannot be read", ps->line);
        } else {
                list = json_object_new_array();
                if (!list)
                        return -ENOMEM;
                for (const char *p = s;;) {
                        _cleanup_free_ char *w = next_word(&p);
                        if (!w)
                                break;
                        json_object *o = json_object_new_string(w);
                        if (!o || json_object_array_add(list, o) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                }
        }
        n = json_object_array_length(list);
        if (n < 2)
                return refuse(ret_reason, "line %u: ADD needs a source and a destination", ps->line);
        for (size_t i = 0; i + 1 < n; i++) {
                json_object *o = json_object_array_get_idx(list, i);
                const char *src = json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
                if (!src)
                        return refuse(ret_reason, "line %u: ADD's JSON form cannot be read", ps->line);
                if (strpbrk(src, ":$") || startswith(src, "git@") || startswith(src, "github.com/") ||
                    endswith(src, ".git") || strstr(src, ".git#"))
                        return refuse(ret_reason, "line %u: ADD %s is refused (the context's files only: no URL, no git "
                                      "repository, no variable)", ps->line, src);
        }
        return 0;
}

static int check_instruction(Parser *ps, const char *text, bool onbuild, char **ret_reason) {
        static const char * const known[] = {
                "FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
                "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
        };
        const char *args = text;
        _cleanup_free_ char *kw = next_word(&args);
        bool found = false;
        int r;

        if (!kw)
                return 0;
        for (char *c = kw; *c; c++)
                *c = (char) toupper((unsigned char) *c);
        for (size_t i = 0; i < ELEMENTSOF(known) && !found; i++)
                found = streq(kw, known[i]);
        if (!found || strlen(kw) > 16)
                return refuse(ret_reason, "line %u: the instruction %.16s is refused (not one the proxy knows)", ps->line, kw);
        if ((streq(kw, "RUN") || streq(kw, "COPY") || streq(kw, "ADD")) && has_heredoc(args))
                return refuse(ret_reason, "line %u: heredocs (<<) are refused (the proxy does not parse them)", ps->line);

        if (streq(kw, "ONBUILD")) {
                if (onbuild)
                        return refuse(ret_reason, "line %u: ONBUILD ONBUILD is refused", ps->line);
                return check_instruction(ps, args, true, ret_reason);
        }
        if (streq(kw, "FROM") && !onbuild) {
                if (ps->n_stages >= PROXY_DOCKERFILE_STAGES_MAX)
                        return refuse(ret_reason, "line %u: more than %u stages", ps->line, PROXY_DOCKERFILE_STAGES_MAX);
                r = check_flags(ps, kw, &args, ret_reason);
                if (r < 0)
                        return r;
                _cleanup_free_ char *image = next_word(&args), *as = next_word(&args), *name = next_word(&args),
                        *extra = next_word(&args);
                if (!image || (as && (strcasecmp(as, "AS") != 0 || !name)) || extra)
                        return refuse(ret_reason, "line %u: FROM cannot be read (FROM [--platform=...] IMAGE [AS NAME])", ps->line);
                /* the engine would substitute build args here; the proxy decides on what it can read */
                if (strchr(image, '$'))
                        return refuse(ret_reason, "line %u: FROM %s is refused (a base image named by a variable is "
                                      "not one the proxy can check)", ps->line, image);
                if (strcasecmp(image, "scratch") != 0 && !stage_known_any(ps, image) &&
                    (strv_length(ps->bases) >= PROXY_DOCKERFILE_STAGES_MAX || strv_extend(&ps->bases, image) < 0))
                        return -ENOMEM;
                char **s = reallocarray(ps->stages, ps->n_stages + 1, sizeof(char *));
                if (!s)
                        return -ENOMEM;
                ps->stages = s;
                ps->stages[ps->n_stages++] = as && (strcasecmp(as, "AS") == 0) ? TAKE_PTR(name) : NULL;
                return 0;
        }
        if (streq(kw, "RUN") || streq(kw, "COPY") || streq(kw, "ADD") || streq(kw, "FROM"))
                r = check_flags(ps, kw, &args, ret_reason);
        else
                r = 0;
        if (r < 0)
                return r;
        if (streq(kw, "ADD"))
                return check_add_sources(ps, args, ret_reason);
        return 0;
}

/* "# key=value" before any other line: 1 and the key (lower case) and value, else 0 */
static int parse_directive(const char *line, size_t len, char **ret_key, char **ret_value) {
        size_t i = 0, ks, ke, vs, ve;

        if (len == 0 || line[0] != '#')
                return 0;
        i = 1;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
        ks = i;
        while (i < len && isalnum((unsigned char) line[i]))
                i++;
        ke = i;
        if (ke == ks || !isalpha((unsigned char) line[ks]))
                return 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
        if (i >= len || line[i] != '=')
                return 0;
        i++;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
        vs = i;
        ve = len;
        while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
                ve--;
        if (ve == vs)
                return 0;
        *ret_key = strndup(line + ks, ke - ks);
        *ret_value = strndup(line + vs, ve - vs);
        if (!*ret_key || !*ret_value)
                return -ENOMEM;
        for (char *c = *ret_key; *c; c++)
                *c = (char) tolower((unsigned char) *c);
        return 1;
}

static void parser_done(Parser *ps) {
        for (size_t i = 0; i < ps->n_stages; i++)
                free(ps->stages[i]);
        free(ps->stages);
        strv_free(ps->bases);
}

int proxy_build_onbuild_check(json_object *triggers, const char *channel, char **ret_reason) {
        _cleanup_(parser_done) Parser ps = { .channel = channel, .escape = '\\' };
        int r;

        *ret_reason = NULL;
        if (!triggers || json_object_is_type(triggers, json_type_null))
                return 0;
        if (!json_object_is_type(triggers, json_type_array))
                return refuse(ret_reason, "the base image's ONBUILD triggers cannot be read");
        for (size_t i = 0; i < json_object_array_length(triggers); i++) {
                json_object *t = json_object_array_get_idx(triggers, i);
                const char *text = json_object_is_type(t, json_type_string) ? json_object_get_string(t) : NULL;
                if (!text || strchr(text, '\n') || strlen(text) > PROXY_DOCKERFILE_MAX)
                        return refuse(ret_reason, "the base image's ONBUILD trigger %zu cannot be read", i);
                ps.line = (unsigned) i + 1;
                r = check_instruction(&ps, text, true, ret_reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

int proxy_dockerfile_check(const char *text, size_t size, const char *channel, char **ret_reason) {
        return proxy_dockerfile_check_bases(text, size, channel, NULL, ret_reason);
}

int proxy_dockerfile_check_bases(const char *text, size_t size, const char *channel, char ***ret_bases, char **ret_reason) {
        _cleanup_(parser_done) Parser ps = { .channel = channel, .escape = '\\' };
        _cleanup_free_ char *logical = NULL;
        size_t logical_len = 0;
        bool directives = true, continued = false;
        unsigned lineno = 0;
        int r;

        *ret_reason = NULL;
        if (size > PROXY_DOCKERFILE_MAX)
                return refuse(ret_reason, "the Dockerfile is larger than %u bytes", PROXY_DOCKERFILE_MAX);
        if (memchr(text, 0, size))
                return refuse(ret_reason, "the Dockerfile has a NUL byte");
        logical = malloc(size + 1);
        if (!logical)
                return -ENOMEM;
        if (size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
                text += 3;
                size -= 3;
        }

        for (size_t off = 0; off <= size; ) {
                const char *line = text + off, *nl = memchr(line, '\n', size - off);
                size_t len = nl ? (size_t) (nl - line) : size - off;
                bool last = !nl;
                off += len + 1;
                lineno++;
                if (len > 0 && line[len - 1] == '\r')
                        len--;

                if (directives) {
                        _cleanup_free_ char *k = NULL, *v = NULL;
                        r = parse_directive(line, len, &k, &v);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                if (streq(k, "escape")) {
                                        if (!streq(v, "\\") && !streq(v, "`"))
                                                return refuse(ret_reason, "line %u: the escape directive takes \\ or ` only", lineno);
                                        ps.escape = v[0];
                                } else if (streq(k, "syntax"))
                                        return refuse(ret_reason, "line %u: the syntax directive is refused (it picks a "
                                                      "frontend that reads the rest its own way)", lineno);
                                else
                                        return refuse(ret_reason, "line %u: the parser directive %.32s is refused (escape only)",
                                                      lineno, k);
                                if (last)
                                        break;
                                continue;
                        }
                        directives = false;
                }

                /* the line is not NUL-terminated (the last one may end the buffer): skip within len */
                size_t tlen = len;
                const char *t = line;
                while (tlen > 0 && (*t == ' ' || *t == '\t'))
                        t++, tlen--;
                /* comments, and empty lines inside a continuation, are dropped */
                if (tlen == 0 || t[0] == '#') {
                        if (last)
                                break;
                        continue;
                }
                if (!continued)
                        ps.line = lineno;
                /* a line ending in the escape character (then blanks) continues */
                size_t e = len;
                while (e > 0 && (line[e - 1] == ' ' || line[e - 1] == '\t'))
                        e--;
                bool cont = e > 0 && line[e - 1] == ps.escape;
                size_t take = cont ? e - 1 : len;
                memcpy(logical + logical_len, line, take);
                logical_len += take;
                if (cont && !last) {
                        continued = true;
                        continue;
                }
                logical[logical_len] = 0;
                r = check_instruction(&ps, logical, false, ret_reason);
                if (r < 0)
                        return r;
                logical_len = 0;
                continued = false;
                if (last)
                        break;
        }
        if (continued) {
                logical[logical_len] = 0;
                r = check_instruction(&ps, logical, false, ret_reason);
                if (r < 0)
                        return r;
        }
        if (ret_bases)
                *ret_bases = TAKE_PTR(ps.bases);
        return 0;
}

/* ---- the context ---- */

/* A gzip stream (every member, as Go's reader reads them) into at most PROXY_BUILD_CONTEXT_MAX bytes. */
static int gunzip(const void *data, size_t size, char **ret, size_t *ret_size) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, allocated = 0;
        z_stream z = {};
        int r = 0;

        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
                return -ENOMEM;
        z.next_in = (Bytef *) data;
        z.avail_in = (uInt) size;
        for (;;) {
                if (n == allocated) {
                        if (allocated >= PROXY_BUILD_CONTEXT_MAX) {
                                r = -EFBIG;
                                break;
                        }
                        size_t want = MIN(MAX(allocated * 2, (size_t) 1 << 20), (size_t) PROXY_BUILD_CONTEXT_MAX);
                        char *p = realloc(out, want);
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        out = p;
                        allocated = want;
                }
                z.next_out = (Bytef *) out + n;
                z.avail_out = (uInt) (allocated - n);
                int k = inflate(&z, Z_NO_FLUSH);
                n = allocated - z.avail_out;
                if (k == Z_STREAM_END) {
                        if (z.avail_in == 0)
                                break;
                        if (inflateReset(&z) != Z_OK) {     /* the next member */
                                r = -EBADMSG;
                                break;
                        }
                        continue;
                }
                if (k == Z_BUF_ERROR && z.avail_out > 0) {      /* the input ended mid-stream */
                        r = -EBADMSG;
                        break;
                }
                if (k != Z_OK && k != Z_BUF_ERROR) {
                        r = k == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
                        break;
                }
        }
        inflateEnd(&z);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        *ret_size = n;
        return 0;
}

/* Whether name is path or a directory on its way (path begins with name + "/"). */
static bool on_path(const char *name, const char *path) {
        const char *rest = startswith(path, name);
        return rest && (!*rest || *rest == '/');
}

int proxy_build_context_check(const void *context, size_t size, const char *dockerfile, bool default_name,
                              const char *channel, char **ret_reason) {
        return proxy_build_context_check_bases(context, size, dockerfile, default_name, channel, NULL, ret_reason);
}

int proxy_build_context_check_bases(const void *context, size_t size, const char *dockerfile, bool default_name,
                                    const char *channel, char ***ret_bases, char **ret_reason) {
        _cleanup_strv_free_ char **bases = NULL;
        static const char * const defaults[] = { "Dockerfile", "dockerfile", "Containerfile", "containerfile" };
        _cleanup_free_ char *unpacked = NULL;
        const unsigned char *b = context;
        const char *names[ELEMENTSOF(defaults)] = { dockerfile };
        size_t n_names = 1, found = 0;
        int r;

        *ret_reason = NULL;
        if (size > PROXY_BUILD_CONTEXT_MAX)
                return refuse(ret_reason, "the build context is larger than %u bytes", PROXY_BUILD_CONTEXT_MAX);
        if (size >= 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08) {
                size_t n = 0;
                r = gunzip(context, size, &unpacked, &n);
                if (r == -ENOMEM)
                        return r;
                if (r == -EFBIG)
                        return refuse(ret_reason, "the build context is larger than %u bytes uncompressed", PROXY_BUILD_CONTEXT_MAX);
                if (r < 0)
                        return refuse(ret_reason, "the build context's gzip stream cannot be read");
                context = unpacked;
                size = n;
        } else if ((size >= 3 && memcmp(b, "BZh", 3) == 0) || (size >= 6 && memcmp(b, "\xfd" "7zXZ\0", 6) == 0) ||
                   (size >= 4 && memcmp(b, "\x28\xb5\x2f\xfd", 4) == 0))
                return refuse(ret_reason, "the build context is compressed other than with gzip (refused: not read)");

        if (default_name) {
                n_names = 0;
                for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
                        names[n_names++] = defaults[i];
        }

        for (size_t off = 0;;) {
                _cleanup_(tar_entry_done) TarEntry e = {};
                _cleanup_free_ char *name = NULL;
                r = tar_read_next(context, size, &off, &e);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return refuse(ret_reason, "the build context is not a tar archive the proxy can read");
                if (r == 0)
                        break;
                name = path_normalise(e.name);
                if (!name) {
                        if (errno == ENOMEM)
                                return -ENOMEM;
                        if (e.name && strspn(e.name, "./") == strlen(e.name) && strstr(e.name, "..") == NULL)
                                continue;       /* "./": the context's root */
                        return refuse(ret_reason, "the build context has an entry whose name leaves it");
                }
                for (size_t i = 0; i < n_names; i++) {
                        if (!on_path(name, names[i]))
                                continue;
                        if (streq(name, names[i]) && e.type == '0') {
                                _cleanup_strv_free_ char **these = NULL;
                                r = proxy_dockerfile_check_bases(e.data, e.size, channel, &these, ret_reason);
                                if (r < 0)
                                        return r;
                                for (size_t k = 0; these && these[k]; k++)
                                        if (!strv_contains(bases, these[k]) &&
                                            (strv_length(bases) >= PROXY_DOCKERFILE_STAGES_MAX ||
                                             strv_extend(&bases, these[k]) < 0))
                                                return -ENOMEM;
                                found++;
                        } else if (!streq(name, names[i]) && e.type == '5')
                                ;       /* a directory on its way */
                        else
                                return refuse(ret_reason, "the Dockerfile %s is not a regular file in the context (or its "
                                              "path goes through a link)", names[i]);
                }
        }
        if (found == 0)
                return refuse(ret_reason, "the build context has no Dockerfile named %s", dockerfile);
        if (ret_bases)
                *ret_bases = TAKE_PTR(bases);
        return 0;
}
