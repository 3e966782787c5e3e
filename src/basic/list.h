/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Doubly linked lists threaded through their items' own "prev" and "next" fields, head a pointer to the
 * first item (NULL: empty). Adding and removing are O(1) and allocate nothing. */

#define LIST_PREPEND(head, item)                                                                        \
        do {                                                                                            \
                typeof(item) _item = (item);                                                            \
                _item->prev = NULL;                                                                     \
                _item->next = (head);                                                                   \
                if (_item->next)                                                                        \
                        _item->next->prev = _item;                                                      \
                (head) = _item;                                                                         \
        } while (0)

/* item must be on the list of head; it is unlinked, its own prev and next cleared. */
#define LIST_REMOVE(head, item)                                                                         \
        do {                                                                                            \
                typeof(item) _item = (item);                                                            \
                if (_item->prev)                                                                        \
                        _item->prev->next = _item->next;                                                \
                else                                                                                    \
                        (head) = _item->next;                                                           \
                if (_item->next)                                                                        \
                        _item->next->prev = _item->prev;                                                \
                _item->prev = _item->next = NULL;                                                       \
        } while (0)
