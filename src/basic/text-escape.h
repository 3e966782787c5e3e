/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Text that came from a container (a path, a command line, a message) made safe to show to a human who
 * is asked to decide about it: in `loop gate list`, a webhook notice, a journal MESSAGE. A crafted path
 * must not be able to rewrite the prompt around it, so everything that changes how the rest of the line
 * is displayed is written as an escape sequence instead:
 *   - C0 controls and DEL as \n, \t, \r or \xNN; C1 controls (U+0080..U+009F) as \uNNNN;
 *   - bidi controls U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069 and the line and paragraph
 *     separators U+2028, U+2029 as \uNNNN;
 *   - bytes that are not valid UTF-8 as \xNN;
 *   - the backslash itself as \\, so an escape in the output always means an escape. */

#include <stddef.h>

/* At most max_bytes of input are escaped; when more follows, the result ends in "..." (0: no cap).
 * Returns NULL on ENOMEM only. */
char *text_escape_display(const char *s, size_t max_bytes);

/* The same for text a human reads as it is, several lines of it (the agent's answers in `loop run`, a
 * journal message in `loop logs`): newlines, tabs and backslashes stay as they are, everything else that
 * would act on the terminal (ESC and the rest of C0, DEL, C1, bidi controls, invalid UTF-8) is escaped
 * as above. Returns NULL on ENOMEM only. */
char *text_escape_prose(const char *s, size_t max_bytes);

/* JSON text (json-c's output, pretty or plain) with every character of a string that would act on a
 * terminal written as a JSON escape: DEL, C1 controls, bidi controls, line separators and what prints as
 * nothing (as above) as \uNNNN (a surrogate pair above U+FFFF), a byte that is not UTF-8 as \ufffd. json-c
 * escapes C0 itself and leaves these raw; outside strings JSON text is ASCII, so its layout is kept. The
 * same JSON value for a parser, except that bytes that were not UTF-8 (no JSON) read as U+FFFD. Returns
 * NULL on ENOMEM only. */
char *text_escape_json(const char *json);
