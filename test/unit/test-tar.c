/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The in-memory tar writer: headers as ustar readers expect them, PAX records for what does not fit, tree
 * walking, and GNU tar's own opinion of the result. */

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "io-util.h"
#include "tap.h"
#include "tar.h"

/* One entry as a reader sees it: PAX records applied. */
typedef struct Entry {
        char name[4096];
        char link[4096];
        char type;
        unsigned mode, uid, gid;
        size_t size;
        const char *data;
} Entry;

#define ENTRIES_MAX 64

static unsigned long long octal(const char *f, size_t n) {
        unsigned long long v = 0;
        for (size_t i = 0; i < n && f[i] >= '0' && f[i] <= '7'; i++)
                v = v * 8 + (unsigned) (f[i] - '0');
        return v;
}

static bool checksum_ok(const unsigned char *h) {
        unsigned sum = 0;
        for (size_t i = 0; i < 512; i++)
                sum += i >= 148 && i < 156 ? ' ' : h[i];
        return octal((const char *) h + 148, 8) == sum;
}

/* Parses the archive; returns the number of entries or -1 when it is malformed (bad checksum, bad PAX
 * record, no end blocks). */
static int parse(const char *buf, size_t size, Entry *out, int max, int *ret_bad_checksums) {
        char pax_path[4096] = "", pax_link[4096] = "";
        long pax_uid = -1, pax_gid = -1;
        int n = 0, bad = 0;
        size_t off = 0;
        static const char zero[512];

        while (off + 512 <= size) {
                const unsigned char *h = (const unsigned char *) buf + off;
                if (memcmp(h, zero, 512) == 0) {
                        *ret_bad_checksums = bad;
                        return off + 1024 == size && memcmp(h + 512, zero, 512) == 0 ? n : -1;
                }
                if (!checksum_ok(h))
                        bad++;
                if (memcmp(h + 257, "ustar", 6) != 0 || memcmp(h + 263, "00", 2) != 0)
                        return -1;
                size_t sz = octal((const char *) h + 124, 12);
                char type = (char) h[156];
                const char *data = buf + off + 512;
                off += 512 + (sz + 511) / 512 * 512;
                if (off > size)
                        return -1;
                if (type == 'x') {
                        for (size_t i = 0; i < sz;) {
                                char *end;
                                unsigned long len = strtoul(data + i, &end, 10);
                                if (len == 0 || i + len > sz || *end != ' ' || data[i + len - 1] != '\n')
                                        return -1;
                                const char *kv = end + 1, *eq = memchr(kv, '=', data + i + len - kv);
                                if (!eq)
                                        return -1;
                                int vl = (int) (data + i + len - 1 - (eq + 1));
                                if (strncmp(kv, "path=", 5) == 0)
                                        snprintf(pax_path, sizeof pax_path, "%.*s", vl, eq + 1);
                                else if (strncmp(kv, "linkpath=", 9) == 0)
                                        snprintf(pax_link, sizeof pax_link, "%.*s", vl, eq + 1);
                                else if (strncmp(kv, "uid=", 4) == 0)
                                        pax_uid = atol(eq + 1);
                                else if (strncmp(kv, "gid=", 4) == 0)
                                        pax_gid = atol(eq + 1);
                                i += len;
                        }
                        continue;
                }
                if (n >= max)
                        return -1;
                Entry *e = &out[n++];
                if (*pax_path)
                        snprintf(e->name, sizeof e->name, "%s", pax_path);
                else
                        snprintf(e->name, sizeof e->name, "%.100s", (const char *) h);
                if (*pax_link)
                        snprintf(e->link, sizeof e->link, "%s", pax_link);
                else
                        snprintf(e->link, sizeof e->link, "%.100s", (const char *) h + 157);
                e->type = type;
                e->mode = (unsigned) octal((const char *) h + 100, 8);
                e->uid = pax_uid >= 0 ? (unsigned) pax_uid : (unsigned) octal((const char *) h + 108, 8);
                e->gid = pax_gid >= 0 ? (unsigned) pax_gid : (unsigned) octal((const char *) h + 116, 8);
                e->size = sz;
                e->data = data;
                pax_path[0] = pax_link[0] = 0;
                pax_uid = pax_gid = -1;
        }
        return -1;
}

static int write_file(const char *path, const void *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        return fd < 0 ? -errno : loop_write(fd, data, size);
}

/* Runs a shell command, returns its exit status and its stdout in *out. */
static int run(const char *cmd, char *out, size_t size) {
        FILE *f = popen(cmd, "r");
        size_t n = 0;
        if (!f)
                return -1;
        n = fread(out, 1, size - 1, f);
        out[n] = 0;
        int st = pclose(f);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_single_entries(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        const void *data;
        size_t size;
        Entry e[ENTRIES_MAX];
        int bad = -1;

        ok(tar_writer_new(&t) == 0, "a writer is created");
        is_int(tar_add_file(t, "etc/hello.txt", 0640, 1000, 1001, "hi\n", 3), 0, "a file is added");
        is_int(tar_add_directory(t, "etc/d", 0755, 0, 0), 0, "a directory is added");
        is_int(tar_add_symlink(t, "etc/link", "hello.txt"), 0, "a symlink is added");
        is_int(tar_add_file(t, "empty", 0600, 0, 0, NULL, 0), 0, "an empty file is added");
        is_int(tar_finish(t, &data, &size), 0, "the archive is finished");
        is_int(size, 4 * 512 + 512 + 2 * 512, "size: four headers, one data block, two end blocks");
        ok(size % 512 == 0, "the archive is a whole number of blocks");

        int n = parse(data, size, e, ENTRIES_MAX, &bad);
        is_int(n, 4, "re-parsing finds four entries");
        is_int(bad, 0, "every header checksum verifies");
        if (n != 4)
                return;
        is_str(e[0].name, "etc/hello.txt", "file name");
        ok(e[0].type == '0', "file type flag is '0'");
        is_int(e[0].mode, 0640, "file mode kept");
        ok(e[0].uid == 1000 && e[0].gid == 1001, "file owner kept");
        ok(e[0].size == 3 && memcmp(e[0].data, "hi\n", 3) == 0, "file data follows its header");
        is_str(e[1].name, "etc/d/", "a directory name ends in a slash");
        ok(e[1].type == '5' && e[1].mode == 0755, "directory type flag '5' and mode");
        ok(e[2].type == '2', "symlink type flag '2'");
        is_str(e[2].link, "hello.txt", "symlink target in linkname");
        ok(e[3].size == 0, "empty file has size 0");
        is_int(tar_add_file(t, "late", 0644, 0, 0, "x", 1), -ESTALE, "nothing can be added after tar_finish()");
}

static void test_invalid_names(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;

        (void) tar_writer_new(&t);
        is_int(tar_add_file(t, "/etc/passwd", 0644, 0, 0, "x", 1), -EINVAL, "an absolute name is refused");
        is_int(tar_add_file(t, "a/../../b", 0644, 0, 0, "x", 1), -EINVAL, "a name with .. is refused");
        is_int(tar_add_file(t, "", 0644, 0, 0, "x", 1), -EINVAL, "an empty name is refused");
        is_int(tar_add_file(t, "a//b", 0644, 0, 0, "x", 1), -EINVAL, "an empty component is refused");
        is_int(tar_add_symlink(t, "l", ""), -EINVAL, "an empty symlink target is refused");
}

static void test_long_names(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        char name[301], target[251], exact[101];
        const void *data;
        size_t size;
        Entry e[ENTRIES_MAX];
        int bad = -1;

        for (size_t i = 0; i < 300; i++)
                name[i] = i % 20 == 19 ? '/' : (char) ('a' + i % 26);
        name[300] = 0;
        memset(target, 't', 250);
        target[250] = 0;
        memset(exact, 'x', 100);
        exact[100] = 0;

        (void) tar_writer_new(&t);
        is_int(tar_add_file(t, name, 0644, 0, 0, "long", 4), 0, "a 300-character name is added");
        is_int(tar_add_symlink(t, "l", target), 0, "a 250-character link target is added");
        is_int(tar_add_file(t, exact, 0644, 0, 0, "x", 1), 0, "a name of exactly 100 characters is added");
        is_int(tar_add_file(t, "big-ids", 0644, 3000000, 4000000, "x", 1), 0, "ids beyond the octal field are added");
        (void) tar_finish(t, &data, &size);

        int n = parse(data, size, e, ENTRIES_MAX, &bad);
        is_int(n, 4, "PAX headers do not count as entries");
        is_int(bad, 0, "PAX headers carry valid checksums too");
        if (n != 4)
                return;
        is_str(e[0].name, name, "the long name comes back from the PAX path record");
        ok(e[0].size == 4 && memcmp(e[0].data, "long", 4) == 0, "the long-named file keeps its data");
        is_str(e[1].link, target, "the long target comes back from the PAX linkpath record");
        is_str(e[2].name, exact, "a 100-character name fits the ustar field without PAX");
        ok(e[3].uid == 3000000 && e[3].gid == 4000000, "large ids come back from PAX uid/gid records");
        /* The exact name needs no PAX header: entry 2's header directly follows entry 1's. */
        ok(((const char *) data)[512 * 7 + 156] == '0', "no PAX header before the 100-character name");
}

static void test_size_cap(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        static const char byte = 'x';
        const void *data;
        size_t size;

        (void) tar_writer_new(&t);
        (void) tar_add_file(t, "small", 0644, 0, 0, "x", 1);
        /* The cap is checked before a byte is read, so the short buffer is never touched. */
        is_int(tar_add_file(t, "huge", 0644, 0, 0, &byte, TAR_SIZE_MAX), -EFBIG,
               "a file as large as TAR_SIZE_MAX is refused with -EFBIG");
        is_int(tar_add_file(t, "huge", 0644, 0, 0, &byte, TAR_SIZE_MAX - 1024), -EFBIG,
               "a file that would push the archive past TAR_SIZE_MAX is refused");
        (void) tar_finish(t, &data, &size);
        is_int(size, 512 * 2 + 1024, "a refused entry leaves the archive as it was");
}

static int make_tree(const char *root) {
        char p[4096];
        static const char script[] = "#!/bin/sh\necho hi\n";

        snprintf(p, sizeof p, "%s/b.txt", root);
        if (write_file(p, "bee\n", 4) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/a.sh", root);
        if (write_file(p, script, sizeof script - 1) < 0 || chmod(p, 0755) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/dir", root);
        if (mkdir(p, 0750) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/dir/z", root);
        if (write_file(p, "zed\n", 4) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/dir/sub", root);
        if (mkdir(p, 0700) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/dir/sub/deep", root);
        if (write_file(p, "", 0) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/passwd-link", root);
        if (symlink("/etc/passwd", p) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/dir-link", root);
        if (symlink("dir", p) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/fifo", root);
        if (mkfifo(p, 0644) < 0)
                return -1;
        return 0;
}

static void test_tree(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL, *t2 = NULL;
        char root[] = "/tmp/test-tar.XXXXXX", cmd[8192], out[8192], p[256];
        const void *data, *data2;
        size_t size, size2;
        Entry e[ENTRIES_MAX];
        int bad = -1, fd;

        if (!mkdtemp(root) || make_tree(root) < 0) {
                ok(0, "test tree created");
                return;
        }
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        (void) tar_writer_new(&t);
        is_int(tar_add_tree(t, fd, "ctx"), 0, "a tree with a FIFO and symlinks is added");
        (void) tar_finish(t, &data, &size);
        int n = parse(data, size, e, ENTRIES_MAX, &bad);
        is_int(bad, 0, "tree headers carry valid checksums");

        static const char *want[] = { "ctx/", "ctx/a.sh", "ctx/b.txt", "ctx/dir/", "ctx/dir/sub/", "ctx/dir/sub/deep",
                                      "ctx/dir/z", "ctx/dir-link", "ctx/passwd-link" };
        bool order = n == (int) (sizeof want / sizeof want[0]);
        for (int i = 0; order && i < n; i++)
                order = strcmp(e[i].name, want[i]) == 0;
        if (!ok(order, "entries come in sorted order, depth first, the FIFO skipped"))
                for (int i = 0; i < n; i++)
                        printf("#   %s\n", e[i].name);
        bool owners = n > 0;
        for (int i = 0; i < n; i++)
                owners = owners && e[i].uid == 0 && e[i].gid == 0;
        ok(owners, "every entry is owned by 0:0");
        if (order) {
                is_int(e[1].mode, 0755, "the executable keeps mode 0755");
                is_int(e[3].mode, 0750, "the directory keeps mode 0750");
                ok(e[8].type == '2' && strcmp(e[8].link, "/etc/passwd") == 0,
                   "a symlink to /etc/passwd is stored as a link, not followed");
                ok(e[7].type == '2' && strcmp(e[7].link, "dir") == 0, "a symlink to a directory is not descended");
                ok(e[2].size == 4 && memcmp(e[2].data, "bee\n", 4) == 0, "file contents are stored");
        }

        (void) tar_writer_new(&t2);
        (void) tar_add_tree(t2, fd, "ctx");
        (void) tar_finish(t2, &data2, &size2);
        ok(size == size2 && memcmp(data, data2, size) == 0, "the same tree gives the same bytes twice");

        /* GNU tar's verdict on the archive, and the files it extracts. */
        snprintf(p, sizeof p, "%s.tar", root);
        if (write_file(p, data, size) < 0) {
                ok(0, "archive written for tar(1)");
        } else {
                snprintf(cmd, sizeof cmd, "tar -tf %s 2>&1", p);
                is_int(run(cmd, out, sizeof out), 0, "tar -t accepts the archive");
                is_str(out, "ctx/\nctx/a.sh\nctx/b.txt\nctx/dir/\nctx/dir/sub/\nctx/dir/sub/deep\nctx/dir/z\n"
                       "ctx/dir-link\nctx/passwd-link\n", "tar -t lists the entries in order");
                snprintf(cmd, sizeof cmd, "mkdir %s.x && tar -xf %s -C %s.x 2>&1 && cat %s.x/ctx/dir/z && "
                         "readlink %s.x/ctx/passwd-link && stat -c %%a %s.x/ctx/a.sh", root, p, root, root, root, root);
                is_int(run(cmd, out, sizeof out), 0, "tar -x extracts it");
                is_str(out, "zed\n/etc/passwd\n755\n", "extracted contents, link target and mode match");
        }

        /* Long names through tar(1) too. */
        _cleanup_(tar_writer_freep) TarWriter *t3 = NULL;
        char longname[260];
        memset(longname, 'n', 255);
        memcpy(longname, "deep/", 5);
        longname[255] = 0;
        (void) tar_writer_new(&t3);
        (void) tar_add_file(t3, longname, 0644, 0, 0, "L\n", 2);
        (void) tar_finish(t3, &data, &size);
        if (write_file(p, data, size) >= 0) {
                snprintf(cmd, sizeof cmd, "tar -xOf %s %s 2>&1 && tar -tf %s | wc -L", p, longname, p);
                is_int(run(cmd, out, sizeof out), 0, "tar(1) finds a 255-character name written with PAX");
                is_str(out, "L\n255\n", "tar(1) reads the PAX path and the data");
        }

        snprintf(cmd, sizeof cmd, "rm -rf %s %s.x %s.tar", root, root, root);
        (void) !system(cmd);
        close(fd);
}

static void test_tree_no_prefix(void) {
        _cleanup_(tar_writer_freep) TarWriter *t = NULL;
        char root[] = "/tmp/test-tar.XXXXXX", cmd[256];
        const void *data;
        size_t size;
        Entry e[ENTRIES_MAX];
        int bad, fd;

        if (!mkdtemp(root))
                return;
        snprintf(cmd, sizeof cmd, "%s/Containerfile", root);
        (void) write_file(cmd, "FROM x\n", 7);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        (void) tar_writer_new(&t);
        is_int(tar_add_tree(t, fd, NULL), 0, "a tree is added without a prefix");
        (void) tar_finish(t, &data, &size);
        int n = parse(data, size, e, ENTRIES_MAX, &bad);
        ok(n == 1 && strcmp(e[0].name, "Containerfile") == 0, "names are relative to the tree's root, no root entry");
        is_int(tar_add_tree(t, -1, NULL), -EBADF, "a bad directory fd is an error");
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        (void) !system(cmd);
        close(fd);
}

int main(void) {
        test_single_entries();
        test_invalid_names();
        test_long_names();
        test_size_cap();
        test_tree();
        test_tree_no_prefix();
        return done_testing();
}
