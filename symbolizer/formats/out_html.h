/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The interactive flame graph: one self-contained HTML file (the page,
 * style and script of symbolizer/html/ plus the profile as JSON), which a
 * browser opens from disk without any network access. One root per process
 * under "all"; frames coloured by kind; zoom, search, tooltips, flame and
 * icicle views.
 *
 * A profile with off-CPU time gives a page that switches between CPU
 * samples, time off CPU and both (as time), opening in the profile's view.
 *
 * The differential page has the shape of the new profile, each frame
 * coloured by how its share of all samples changed from the base (red grew,
 * blue shrank), and a table of the functions that changed most; it compares
 * the profiles' view (CPU samples, or off-CPU time, or both).
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_OUT_HTML_H
#define EMBER_SYMBOLIZER_FORMATS_OUT_HTML_H

#include <stdio.h>

#include "symbolizer/profile/profile.h"

/* Rows of the table of biggest changes in a differential page. */
#define EMBER_HTML_DIFF_ROWS 40

int ember_write_html(const struct ember_profile *p, FILE *out);
int ember_write_html_diff(const struct ember_profile *base, const struct ember_profile *cur,
                          FILE *out);

#endif
