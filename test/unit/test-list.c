/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stddef.h>

#include "list.h"
#include "tap.h"

typedef struct Item Item;
struct Item {
        int v;
        Item *prev, *next;
};

/* The values from head on, checking every prev link on the way, as one number (1, 2, 3 -> 123). */
static int walk(Item *head) {
        int n = 0;
        for (Item *i = head, *prev = NULL; i; prev = i, i = i->next) {
                if (i->prev != prev)
                        return -1;
                n = n * 10 + i->v;
        }
        return n;
}

int main(void) {
        Item a = { .v = 1 }, b = { .v = 2 }, c = { .v = 3 };
        Item *head = NULL;

        LIST_PREPEND(head, &c);
        is_int(walk(head), 3, "LIST_PREPEND() onto an empty list makes the item the head");
        LIST_PREPEND(head, &b);
        LIST_PREPEND(head, &a);
        is_int(walk(head), 123, "LIST_PREPEND() puts each item first, prev links right");

        LIST_REMOVE(head, &b);
        is_int(walk(head), 13, "LIST_REMOVE() of a middle item links its neighbours");
        ok(!b.prev && !b.next, "and clears the item's links");
        LIST_REMOVE(head, &a);
        is_int(walk(head), 3, "LIST_REMOVE() of the head moves the head");
        LIST_PREPEND(head, &b);
        LIST_REMOVE(head, &c);
        is_int(walk(head), 2, "LIST_REMOVE() of the last item");
        LIST_REMOVE(head, &b);
        ok(head == NULL, "LIST_REMOVE() of the only item empties the list");
        return done_testing();
}
