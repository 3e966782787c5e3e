/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What a build may do, read from its context (src/dockerproxy/dockerproxy-build.h), and the tar reader it uses. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "dockerproxy-build.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"
#include "tar.h"
#include "json-util.h"

#define CHANNEL "chan"
#define assert_se(x) do { if (!(x)) abort(); } while (0)

static int df(const char *text, char **ret_reason) {
        return proxy_dockerfile_check(text, strlen(text), CHANNEL, ret_reason);
}

#define allowed(text, name) ({ _cleanup_free_ char *_w = NULL; int _r = df(text, &_w); ok(_r == 0, name); if (_r) diag(_w ?: "(no reason)"); })
#define refused(text, want, name) ({ _cleanup_free_ char *_w = NULL; int _r = df(text, &_w); \
                ok(_r == -EPERM && _w && strstr(_w, want), name); if (_r != -EPERM || !_w || !strstr(_w, want)) diag(_w ?: "(allowed)"); })

static void test_dockerfile(void) {
        allowed("FROM busybox\nRUN echo hi\nCMD [\"sh\"]\n", "an ordinary Dockerfile is allowed");
        allowed("FROM busybox AS a\nRUN true\nFROM busybox\nCOPY --from=a /x /y\nCOPY --from=0 /x /z\n",
                "COPY --from an earlier stage, by name and index, is allowed");
        allowed("FROM busybox\nCOPY --from=chan-tools:v1 /x /y\n", "COPY --from an image of the channel's own is allowed");
        allowed("FROM busybox\nRUN --mount=type=tmpfs,target=/t --mount=type=secret,id=s --mount=type=cache,target=/c true\n",
                "RUN --mount of tmpfs, secret and cache (no from) is allowed");
        allowed("FROM busybox\nRUN --network=none true\n", "RUN --network=none is allowed");
        allowed("FROM busybox\nADD --chown=1:1 a.tar /x/\n", "ADD of a local file (with --chown) is allowed");
        allowed("# escape=`\nFROM busybox\nRUN echo a `\n    b\n", "the escape directive is read");
        allowed("\xef\xbb\xbf" "FROM busybox\n", "a byte-order mark is skipped");
        allowed("FROM busybox\r\nRUN true\r\n", "CRLF line ends are read");
        allowed("# a comment\nFROM busybox\n", "a comment that is no directive is a comment");

        refused("FROM busybox AS a\nFROM busybox\nRUN --mount=type=bind,from=a,source=/,target=/h cat /h/etc/shadow\n",
                "line 3: RUN --mount with from= is refused", "RUN --mount=type=bind,from= is refused (CVE-2024-1753)");
        refused("FROM busybox\nRUN --mount=type=cache,from=busybox,target=/c true\n", "from= is refused",
                "RUN --mount=type=cache,from= is refused");
        refused("FROM busybox\nRUN --mount=type=bind,source=link,target=/h true\n", "type=bind is refused",
                "RUN --mount=type=bind from the context is refused");
        refused("FROM busybox\nRUN --mount=target=/h true\n", "type=bind is refused", "RUN --mount without a type (a bind) is refused");
        refused("FROM busybox\nRUN --mount=type=BIND,FROM=x,target=/h true\n", "from= is refused", "RUN --mount's keys are read ignoring case");
        refused("FROM busybox\nRUN --mount=type=volume,target=/h true\n", "type=volume is refused", "an unknown mount type is refused");
        refused("FROM busybox\nRUN --mount=type=tmpfs,target=/h,relabel=shared true\n", "option relabel is refused",
                "an unknown mount option is refused");
        refused("FROM busybox\nRUN --mount=type=$T,target=/h true\n", "cannot be read", "a variable in a mount is refused");
        refused("FROM busybox\nRUN --mount=type=secret,id=s,src=/etc/shadow true\n", "with a source is refused",
                "a secret mount with a source is refused");
        refused("FROM busybox\nRUN \\\n  --mount=type=bind,from=x,target=/h \\\n  true\n", "line 2: RUN --mount with from=",
                "a mount after a line continuation is read");
        refused("FROM busybox\nRUN \\\n# comment\n\n  --mount=type=bind,from=x,target=/h true\n", "from=",
                "a mount after a continuation, a comment and an empty line is read");
        refused("# escape=`\nFROM busybox\nRUN `\n --mount=type=bind,from=x,target=/h true\n", "from=",
                "a mount after a continuation with the ` escape is read");
        refused("FROM busybox\nrun --mount=type=bind,from=x,target=/h true\n", "from=", "instructions are read ignoring case");
        refused("FROM busybox\nRUN --security=insecure true\n", "RUN --security is refused", "RUN --security is refused");
        refused("FROM busybox\nRUN --network=host true\n", "RUN --network=host is refused", "RUN --network=host is refused");
        refused("FROM busybox\nADD http://127.0.0.1:9/x /x\n", "ADD http://127.0.0.1:9/x is refused", "a remote ADD is refused");
        refused("FROM busybox\nADD [\"https://example.invalid/x\", \"/x\"]\n", "is refused", "a remote ADD in JSON form is refused");
        refused("FROM busybox\nADD git@github.com:a/b.git /x\n", "is refused", "ADD git@ is refused");
        refused("FROM busybox\nADD github.com/a/b /x\n", "is refused", "ADD of a git path is refused");
        refused("FROM busybox\nARG U=http://x/\nADD ${U} /x\n", "is refused", "ADD with a variable is refused");
        refused("FROM busybox\nADD --checksum=sha256:00 a /x\n", "ADD --checksum is refused", "an unknown ADD flag is refused");
        refused("FROM busybox\nCOPY --from=busybox /etc/passwd /x\n", "COPY --from=busybox is refused",
                "COPY --from another image is refused");
        refused("FROM busybox\nCOPY --from=otherchan-x /a /b\n", "is refused", "COPY --from another channel's image is refused");
        refused("FROM busybox AS a\nCOPY --from=a /x /y\n", "is refused", "COPY --from the current stage is refused");
        refused("FROM busybox\nCOPY --from=0 /x /y\n", "is refused", "COPY --from the current stage's index is refused");
        refused("FROM busybox\nCOPY --from=$S /x /y\n", "cannot be read", "COPY --from a variable is refused");
        refused("# syntax=docker/dockerfile:1\nFROM busybox\n", "syntax directive is refused", "# syntax= is refused");
        refused("#  SYNTAX = docker/dockerfile:1\nFROM busybox\n", "syntax directive is refused",
                "# syntax= with blanks and capitals is refused");
        refused("# check=skip=all\n# syntax=x\nFROM busybox\n", "directive check is refused", "an unknown directive is refused");
        refused("# escape=x\nFROM busybox\n", "escape directive takes", "an escape that is neither \\ nor ` is refused");
        refused("FROM busybox\nRUN <<EOF\necho hi\nEOF\n", "heredocs", "a heredoc is refused");
        refused("FROM busybox\nCOPY <<EOF /x\nhi\nEOF\n", "heredocs", "a heredoc in COPY is refused");
        refused("FROM busybox\nFROB x\n", "FROB is refused", "an unknown instruction is refused");
        refused("FROM busybox\nONBUILD RUN --mount=type=bind,from=x,target=/h true\n", "from=", "ONBUILD's instruction is checked");
        refused("FROM busybox\nRUN --mount=type=bind,from=x,target=/h true \\", "from=",
                "a continuation at the end of the file is checked");
        {
                _cleanup_free_ char *w = NULL;
                ok(proxy_dockerfile_check("FROM a\0RUN", 10, CHANNEL, &w) == -EPERM, "a Dockerfile with a NUL is refused");
        }
        {
                _cleanup_free_ char *big = malloc(PROXY_DOCKERFILE_MAX + 2), *w = NULL;
                memset(big, '#', PROXY_DOCKERFILE_MAX + 1);
                big[PROXY_DOCKERFILE_MAX + 1] = 0;
                ok(df(big, &w) == -EPERM && strstr(w, "larger"), "a Dockerfile over PROXY_DOCKERFILE_MAX is refused");
        }
}

/* The base images a build names, for the proxy to ask the engine about; and their ONBUILD triggers. */
static void test_bases_and_onbuild(void) {
        const char *text = "FROM busybox AS base\nFROM base\nFROM scratch\nFROM --platform=linux/amd64 quay.io/x/y:1 AS Two\n"
                           "FROM two\nFROM busybox\n";
        _cleanup_strv_free_ char **bases = NULL;
        _cleanup_free_ char *w = NULL;

        is_int(proxy_dockerfile_check_bases(text, strlen(text), CHANNEL, &bases, &w), 0, "a multi-stage Dockerfile is read");
        ok(strv_length(bases) == 3 && streq(bases[0], "busybox") && streq(bases[1], "quay.io/x/y:1") && streq(bases[2], "busybox"),
           "its bases are the images FROM names: not scratch, not an earlier stage (by name, ignoring case)");
        refused("ARG B=busybox\nFROM $B\n", "named by a variable", "a FROM with a variable is refused");
        refused("FROM ${B:-busybox}\n", "named by a variable", "...in braces too");
        refused("FROM busybox AS\n", "cannot be read", "FROM ... AS without a name is refused");
        refused("FROM busybox extra\n", "cannot be read", "FROM with a word that is not AS is refused");
        {
                _cleanup_(json_object_putp) json_object *good = json_tokener_parse("[\"RUN echo hi\",\"COPY a /b\"]");
                _cleanup_(json_object_putp) json_object *remote = json_tokener_parse("[\"RUN true\",\"ADD http://127.0.0.1:9/x /x\"]");
                _cleanup_(json_object_putp) json_object *bind = json_tokener_parse("[\"RUN --mount=type=bind,target=/h true\"]");
                _cleanup_(json_object_putp) json_object *nested = json_tokener_parse("[\"ONBUILD RUN true\"]");
                _cleanup_(json_object_putp) json_object *bad = json_tokener_parse("[1]");
                _cleanup_free_ char *w1 = NULL, *w2 = NULL, *w3 = NULL, *w4 = NULL, *w5 = NULL, *w6 = NULL;
                is_int(proxy_build_onbuild_check(NULL, CHANNEL, &w1), 0, "a base without ONBUILD triggers passes");
                is_int(proxy_build_onbuild_check(good, CHANNEL, &w2), 0, "ONBUILD triggers the allow-list allows pass");
                ok(proxy_build_onbuild_check(remote, CHANNEL, &w3) == -EPERM && w3 && strstr(w3, "ADD http"),
                   "an ONBUILD trigger with a remote ADD is refused, and named");
                ok(proxy_build_onbuild_check(bind, CHANNEL, &w4) == -EPERM, "an ONBUILD trigger with a bind mount is refused");
                ok(proxy_build_onbuild_check(nested, CHANNEL, &w5) == -EPERM, "an ONBUILD trigger that is ONBUILD is refused");
                ok(proxy_build_onbuild_check(bad, CHANNEL, &w6) == -EPERM, "an ONBUILD trigger that is no string is refused");
        }
}

static void test_dockerfile_name(void) {
        struct { const char *in, *want; } t[] = {
                { NULL, "Dockerfile" }, { "", "Dockerfile" }, { "./sub//Dockerfile.x", "sub/Dockerfile.x" },
                { "/abs/Dockerfile", "abs/Dockerfile" }, { "../etc/passwd", NULL }, { "a/../../b", NULL },
                { "http://127.0.0.1/Dockerfile", NULL }, { "[\"a\",\"b\"]", NULL }, { "a\tb\x01", NULL }, { ".", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *n = NULL;
                int r = proxy_build_dockerfile_name(t[i].in, &n);
                if (t[i].want)
                        is_str(r == 0 ? n : NULL, t[i].want, "dockerfile=%s is %s", strna(t[i].in), t[i].want);
                else
                        ok(r == -EINVAL, "dockerfile=%s is refused", t[i].in);
        }
}

static void tar_of(TarWriter *t, const void **data, size_t *size) {
        assert_se(tar_finish(t, data, size) == 0);
}

static int ctx(const char *name, const char *dockerfile, bool deflt, char **ret_reason, int (*add)(TarWriter *)) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        const void *data;
        size_t size;

        assert_se(tar_writer_new(&t) == 0);
        if (add)
                assert_se(add(t) == 0);
        if (name)
                assert_se(tar_add_file(t, name, 0644, 0, 0, dockerfile, strlen(dockerfile)) == 0);
        tar_of(t, &data, &size);
        return proxy_build_context_check(data, size, deflt ? "Dockerfile" : name, deflt, CHANNEL, ret_reason);
}

static int add_dir(TarWriter *t) {
        return tar_add_directory(t, "sub", 0755, 0, 0);
}

static int add_link(TarWriter *t) {
        return tar_add_symlink(t, "Dockerfile", "/etc/passwd");
}

static int add_good_df(TarWriter *t) {
        return tar_add_file(t, "Dockerfile", 0644, 0, 0, "FROM busybox\n", 13);
}

static int add_lower(TarWriter *t) {
        return tar_add_file(t, "dockerfile", 0644, 0, 0, "FROM a\nADD http://x/ /\n", strlen("FROM a\nADD http://x/ /\n"));
}

static void test_context(void) {
        static const char bad[] = "FROM busybox\nRUN --mount=type=bind,from=busybox,target=/h true\n";
        char *w = NULL;

        ok(ctx("Dockerfile", "FROM busybox\n", true, &w, NULL) == 0, "a context with an ordinary Dockerfile is allowed");
        w = mfree(w);
        ok(ctx("Dockerfile", bad, true, &w, NULL) == -EPERM && strstr(w, "from="), "a context's refused Dockerfile is refused");
        w = mfree(w);
        ok(ctx("sub/Other", bad, false, &w, add_dir) == -EPERM && strstr(w, "from="), "a Dockerfile named by the parameter is read");
        w = mfree(w);
        ok(ctx("Dockerfile", bad, true, &w, add_good_df) == -EPERM, "a later entry of the same name is read too (the last one wins)");
        w = mfree(w);
        ok(ctx(NULL, NULL, true, &w, add_link) == -EPERM && strstr(w, "not a regular file"), "a Dockerfile that is a symlink is refused");
        w = mfree(w);
        ok(ctx(NULL, NULL, true, &w, NULL) == -EPERM && strstr(w, "no Dockerfile"), "a context without the Dockerfile is refused");
        w = mfree(w);
        ok(ctx("Dockerfile", "FROM busybox\n", true, &w, add_lower) == -EPERM && strstr(w, "ADD"),
           "with the default name, a dockerfile (lower case) beside it is read too");
        w = mfree(w);
        {
                _cleanup_(tar_writer_freep) TarWriter *t = NULL;
                const void *data;
                size_t size;
                assert_se(tar_writer_new(&t) == 0);
                assert_se(tar_add_file(t, "Dockerfile", 0644, 0, 0, bad, strlen(bad)) == 0);
                tar_of(t, &data, &size);
                uLongf n = compressBound(size) + 32;
                _cleanup_free_ unsigned char *gz = malloc(n);
                z_stream z = { .next_in = (Bytef *) data, .avail_in = (uInt) size, .next_out = gz, .avail_out = (uInt) n };
                assert_se(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
                assert_se(deflate(&z, Z_FINISH) == Z_STREAM_END);
                size_t gz_size = z.total_out;
                deflateEnd(&z);
                ok(proxy_build_context_check(gz, gz_size, "Dockerfile", true, CHANNEL, &w) == -EPERM && strstr(w, "from="),
                   "a gzip-compressed context's Dockerfile is read");
                w = mfree(w);
                ok(proxy_build_context_check(gz, gz_size - 8, "Dockerfile", true, CHANNEL, &w) == -EPERM && strstr(w, "gzip"),
                   "a truncated gzip stream is refused");
                w = mfree(w);
                ok(proxy_build_context_check("BZh91AY", 7, "Dockerfile", true, CHANNEL, &w) == -EPERM && strstr(w, "gzip"),
                   "a bzip2 context is refused");
                w = mfree(w);
                _cleanup_free_ char *copy = malloc(size);
                assert_se(copy);
                memcpy(copy, data, size);
                copy[100] ^= 1;         /* the mode: the checksum no longer matches */
                ok(proxy_build_context_check(copy, size, "Dockerfile", true, CHANNEL, &w) == -EPERM && strstr(w, "not a tar"),
                   "a header whose checksum is wrong is refused");
                w = mfree(w);
        }
        ok(proxy_build_context_check("x", PROXY_BUILD_CONTEXT_MAX + 1, "Dockerfile", true, CHANNEL, &w) == -EPERM &&
           strstr(w, "larger"), "a context over PROXY_BUILD_CONTEXT_MAX is refused");
        w = mfree(w);
}

static void test_tar_long_name(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        char name[300];
        const void *data;
        size_t size, off = 0;
        int found = 0;

        memset(name, 'a', sizeof name - 1);
        name[sizeof name - 1] = 0;
        assert_se(tar_writer_new(&t) == 0);
        assert_se(tar_add_file(t, name, 0644, 0, 0, "x", 1) == 0);
        assert_se(tar_add_symlink(t, "l", "/etc") == 0);
        tar_of(t, &data, &size);
        for (;;) {
                _cleanup_(tar_entry_done) TarEntry e = {};
                int r = tar_read_next(data, size, &off, &e);
                if (r <= 0) {
                        ok(r == 0, "the archive reads to its end");
                        break;
                }
                if (e.type == '0' && streq(e.name, name) && e.size == 1)
                        found++;
                if (e.type == '2' && streq(e.name, "l") && streq_ptr(e.linkname, "/etc"))
                        found++;
        }
        is_int(found, 2, "a PAX long name and a symlink are read back");
}

/* Property: a mount option or a RUN flag the tables do not name is refused, whatever it is called
 * (every name of one to three letters, and a few longer ones). */
static void test_unknown_names_refused(void) {
        static const char * const known[] = {
                "type", "target", "dst", "destination", "id", "mode", "uid", "gid", "required", "sharing", "size",
                "readonly", "ro", "rw", "readwrite", "env", "source", "src", "from",
        };
        unsigned tried = 0, refused_n = 0, run_tried = 0, run_refused = 0;
        char name[8];

        for (unsigned n = 0; n < 26 + 26 * 26 + 26 * 26 * 26; n++) {
                unsigned v = n;
                size_t len = n < 26 ? 1 : n < 26 + 676 ? 2 : 3;
                v -= len == 1 ? 0 : len == 2 ? 26 : 26 + 676;
                for (size_t i = len; i > 0; i--, v /= 26)
                        name[i - 1] = (char) ('a' + v % 26);
                name[len] = 0;
                bool is_known = false;
                for (size_t i = 0; i < ELEMENTSOF(known); i++)
                        is_known = is_known || streq(name, known[i]);
                _cleanup_free_ char *text = NULL, *w = NULL, *text2 = NULL, *w2 = NULL;
                if (!is_known) {
                        assert_se(asprintf(&text, "FROM b\nRUN --mount=type=tmpfs,target=/t,%s=1 true\n", name) > 0);
                        tried++;
                        refused_n += df(text, &w) == -EPERM;
                }
                if (!streq(name, "mount") && !streq(name, "network")) {
                        assert_se(asprintf(&text2, "FROM b\nRUN --%s=x true\n", name) > 0);
                        run_tried++;
                        run_refused += df(text2, &w2) == -EPERM;
                }
        }
        is_int(refused_n, tried, "every mount option outside the table is refused (%u names)", tried);
        is_int(run_refused, run_tried, "every RUN flag outside the table is refused (%u names)", run_tried);
}

/* The Dockerfile as the proxy has it: bytes with nothing after them. Put at the end of a page whose next
 * page cannot be read, a read past its end faults instead of finding a byte that stops it. */
static void test_last_line_blank(void) {
        static const char * const cases[] = { "FROM busybox\n   ", "FROM busybox\n\t", "FROM busybox\n \t \r" };
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        assert_se(map != MAP_FAILED);
        assert_se(mprotect(map + page, page, PROT_NONE) == 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *w = NULL;
                size_t n = strlen(cases[i]);
                char *text = map + page - n;
                memcpy(text, cases[i], n);
                ok(proxy_dockerfile_check(text, n, CHANNEL, &w) == 0,
                   "a last line of blanks without a newline is read within the Dockerfile (case %zu)", i);
        }
        assert_se(munmap(map, 2 * page) == 0);
}

int main(void) {
        test_dockerfile();
        test_last_line_blank();
        test_unknown_names_refused();
        test_bases_and_onbuild();
        test_dockerfile_name();
        test_context();
        test_tar_long_name();
        return done_testing();
}
