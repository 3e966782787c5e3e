/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Unit names derived from channel names. */

/* Escapes s as `systemd-escape` does: "/" -> "-", and everything outside [A-Za-z0-9:_.] (and a leading ".")
 * as \xNN. Returns NULL on OOM. */
char *unit_name_escape(const char *s);

/* "loop-ESCAPED.slice" for a channel name. */
char *channel_slice_name(const char *channel);
