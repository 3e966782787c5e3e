/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a channel keeps its state on the host: home, default work dir, the work queue, the session. */

/* The state dir of whoever runs the channel: $LOOP_STATE_DIR/NAME (tests, or a second installation), else
 * /var/lib/loop/NAME for root, else the user's XDG state dir ($XDG_STATE_HOME/loop/NAME or
 * ~/.local/state/loop/NAME), so `loop run` works for an unprivileged user. */
int channel_state_dir(const char *channel, char **ret);

/* The state dir holding the queue that loop-agent@NAME.service consumes: $LOOP_STATE_DIR/NAME, else
 * /var/lib/loop/NAME for everyone: an unprivileged member of group loop queues work there too (see
 * queue.h for the permissions). */
int channel_queue_dir(const char *channel, char **ret);
