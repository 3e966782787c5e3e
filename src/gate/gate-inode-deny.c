/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "gate-inode-deny.h"
#include "gate-resolve.h"
#include "macro.h"

typedef struct Item {
        dev_t dev;
        ino_t ino;
        char rule[GATE_RULE_ID_MAX];
} Item;

struct GateInodeDeny {
        Item *items;                    /* sorted by (dev, ino) once built */
        size_t n;
};

/* nftw() has no userdata: the walk is one at a time. */
static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        const GatePolicy *policy;
        GateInodeDeny *set;
        size_t visited;
        int error;
        int root_fd;                    /* "/", for gate_resolved_fold_from() */
        char *fold_dir;                 /* the directory fold_from was found for */
        size_t fold_from;
} walk;

/* Where a file's path starts to fold case: found once a directory (nftw visits a directory's files one
 * after the other), the same for every file in it. */
static size_t fold_from(const char *path) {
        GateResolved res = GATE_RESOLVED_NULL;
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = NULL;
        size_t r = 0;

        if (!casefold_possible() || !slash)
                return SIZE_MAX;
        dir = strndup(path, slash - path);
        if (!dir)
                return 0;
        if (streq_ptr(walk.fold_dir, dir))
                return walk.fold_from;
        res.dir_fd = open(isempty(dir) ? "/" : dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        res.path = (char *) path;
        if (res.dir_fd < 0 || walk.root_fd < 0 || gate_resolved_fold_from(&res, walk.root_fd, &r) < 0)
                r = 0;                  /* cannot tell: folded from the start */
        res.path = NULL;
        gate_resolved_done(&res);
        free(walk.fold_dir);
        walk.fold_dir = TAKE_PTR(dir);
        walk.fold_from = r;
        return r;
}

static int item_cmp(const void *a, const void *b) {
        const Item *x = a, *y = b;

        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        GateVerdict v;
        Item *it;

        (void) ftw;
        if (++walk.visited > GATE_INODE_DENY_WALK_MAX) {
                walk.error = -E2BIG;
                return 1;
        }
        if (type != FTW_F || !S_ISREG(st->st_mode))
                return 0;
        /* A secret's name in a directory that folds case may be spelt otherwise (.ENV is what .env opens):
         * where that would matter, its directories are asked. */
        if (casefold_possible() && gate_policy_check_file_fold_matters(walk.policy, FILE_OP_READ, path))
                gate_policy_check_file_folding(walk.policy, FILE_OP_READ, path, fold_from(path), &v);
        else
                gate_policy_check_file(walk.policy, FILE_OP_READ, path, &v);
        if (v.decision == DECISION_ALLOW)
                return 0;
        if (walk.set->n >= GATE_INODE_DENY_MAX) {
                walk.error = -E2BIG;
                return 1;
        }
        if (walk.set->n % 256 == 0) {
                Item *n = reallocarray(walk.set->items, walk.set->n + 256, sizeof(Item));
                if (!n) {
                        walk.error = -ENOMEM;
                        return 1;
                }
                walk.set->items = n;
        }
        it = &walk.set->items[walk.set->n++];
        *it = (Item) { .dev = st->st_dev, .ino = st->st_ino };
        (void) snprintf(it->rule, sizeof it->rule, "%s", v.rule_id);
        return 0;
}

int gate_inode_deny_build(const GatePolicy *p, const char *root, GateInodeDeny **ret) {
        _cleanup_(gate_inode_deny_freep) GateInodeDeny *s = calloc(1, sizeof(GateInodeDeny));
        int r;

        if (!s)
                return -ENOMEM;
        pthread_mutex_lock(&walk_lock);
        walk.policy = p;
        walk.set = s;
        walk.visited = 0;
        walk.error = 0;
        walk.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        walk.fold_dir = NULL;
        /* Unreadable directories are skipped by nftw (FTW_DNR): the agent cannot list them either. */
        r = nftw(root, visit, 64, FTW_PHYS | FTW_MOUNT);
        if (r < 0)
                r = -errno;
        else if (walk.error < 0)
                r = walk.error;
        else
                r = 0;
        walk.root_fd = safe_close(walk.root_fd);
        walk.fold_dir = mfree(walk.fold_dir);
        pthread_mutex_unlock(&walk_lock);
        if (r < 0)
                return r;
        qsort(s->items, s->n, sizeof(Item), item_cmp);
        *ret = TAKE_PTR(s);
        return 0;
}

const char *gate_inode_deny_find(const GateInodeDeny *s, dev_t dev, ino_t ino) {
        Item key = { .dev = dev, .ino = ino };
        const Item *it;

        if (!s || s->n == 0)
                return NULL;
        it = bsearch(&key, s->items, s->n, sizeof(Item), item_cmp);
        return it ? it->rule : NULL;
}

size_t gate_inode_deny_size(const GateInodeDeny *s) {
        return s ? s->n : 0;
}

GateInodeDeny *gate_inode_deny_free(GateInodeDeny *s) {
        if (!s)
                return NULL;
        free(s->items);
        free(s);
        return NULL;
}
