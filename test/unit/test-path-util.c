/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Lexical paths: cleaning (allocated, in place, into a caller's buffer) and containment, with the one
 * answer for "/" that every caller gets. */

#include <errno.h>

#include "macro.h"
#include "path-util.h"
#include "tap.h"

static void clean_is(const char *in, const char *want) {
        _cleanup_free_ char *got = path_clean(in);
        is_str(got, want, "path %s cleans to %s", in, want ?: "NULL");
        if (want) {
                _cleanup_free_ char *copy = strdup(in);
                is_str(copy ? path_simplify(copy) : NULL, want, "path %s simplifies in place to %s", in, want);
        }
}

static void test_path_clean(void) {
        clean_is("/", "/");
        clean_is("/a/b", "/a/b");
        clean_is("//a//b//", "/a/b");
        clean_is("/a/./b/.", "/a/b");
        clean_is("/a/b/../c", "/a/c");
        clean_is("/a/b/..", "/a");
        clean_is("/a/..", "/");
        clean_is("/..", "/");
        clean_is("/../../etc/shadow", "/etc/shadow");
        clean_is("/work/../../etc", "/etc");
        clean_is("/a/.../b", "/a/.../b");
        clean_is("/a/..b/.c", "/a/..b/.c");
        clean_is("///", "/");
        clean_is("/./", "/");
        clean_is("/home/u/./x/", "/home/u/x");
        clean_is("relative/path", NULL);
        clean_is("", NULL);
        errno = 0;
        ok(path_clean(NULL) == NULL && errno == EINVAL, "a NULL path cleans to NULL with EINVAL");
        errno = 0;
        ok(path_clean("a/b") == NULL && errno == EINVAL, "a relative path cleans to NULL with EINVAL");
}

static void test_path_join_clean(void) {
        _cleanup_free_ char *a = path_join_clean("/work", "sub/../x"), *b = path_join_clean("/", "../etc"),
                             *c = path_join_clean("/work/", "");
        is_str(a, "/work/x", "joining sub/../x to /work gives /work/x");
        is_str(b, "/etc", "joining ../etc to / stays below the root");
        is_str(c, "/work", "joining nothing gives the directory itself, cleaned");
}

static void resolve_is(const char *base, const char *path, size_t stack_size, const char *want, bool heap) {
        char stack[64], *buf = NULL, *h = (char *) 1;
        int r = path_resolve_clean(base, path, stack, stack_size, &buf, &h);

        ok(r == 0 && streq(buf, want) && (heap ? h == buf : (h == NULL && buf == stack)),
           "%s against %s resolves to %s %s", path, base ?: "(none)", want, heap ? "on the heap" : "on the stack");
        free(heap ? h : NULL);
}

static void test_path_resolve_clean(void) {
        char stack[64], *buf, *h;

        resolve_is("/work", "a/../b", sizeof stack, "/work/b", false);
        resolve_is("/work", "/etc/./x", sizeof stack, "/etc/x", false);
        resolve_is(NULL, "/etc", sizeof stack, "/etc", false);
        resolve_is("/w", "../../..", sizeof stack, "/", false);
        resolve_is("/work", "a-name-longer-than-the-stack", 8, "/work/a-name-longer-than-the-stack", true);
        ok(path_resolve_clean(NULL, "rel", stack, sizeof stack, &buf, &h) == -EINVAL,
           "a relative path with no base is -EINVAL");
        ok(path_resolve_clean("rel", "x", stack, sizeof stack, &buf, &h) == -EINVAL,
           "a relative path against a relative base is -EINVAL");
}

static void test_path_is_inside(void) {
        ok(path_is_inside("/a", "/a"), "a path is inside itself");
        ok(path_is_inside("/a/b", "/a"), "/a/b is inside /a");
        ok(path_is_inside("/a/b/c", "/a"), "/a/b/c is inside /a");
        ok(!path_is_inside("/ab", "/a"), "/ab is not inside /a (components, not bytes)");
        ok(!path_is_inside("/a", "/a/b"), "a parent is not inside its child");
        ok(!path_is_inside("/b", "/a"), "a sibling is not inside");
        ok(path_is_inside("/", "/"), "the root is inside the root");
        ok(path_is_inside("/etc/shadow", "/"), "every absolute path is inside the root");
        ok(!path_is_inside("etc", "/"), "a relative path is not inside the root");
        ok(!path_is_inside("a/b", "/a"), "a relative path is not inside an absolute directory");
        ok(!path_is_inside("", "/"), "the empty path is inside nothing");
}

static void test_path_basename(void) {
        is_str(path_basename("/usr/bin/rm"), "rm", "the basename of /usr/bin/rm is rm");
        is_str(path_basename("rm"), "rm", "a name without '/' is its own basename");
        is_str(path_basename("/a/"), "", "a trailing '/' leaves an empty basename");
}

int main(void) {
        test_path_clean();
        test_path_join_clean();
        test_path_resolve_clean();
        test_path_is_inside();
        test_path_basename();
        return done_testing();
}
