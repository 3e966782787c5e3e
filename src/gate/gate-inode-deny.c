/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gate-inode-deny.h"
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
} walk;

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
        /* Unreadable directories are skipped by nftw (FTW_DNR): the agent cannot list them either. */
        r = nftw(root, visit, 64, FTW_PHYS | FTW_MOUNT);
        if (r < 0)
                r = -errno;
        else if (walk.error < 0)
                r = walk.error;
        else
                r = 0;
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
