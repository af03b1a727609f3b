/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flame graph page's sources (symbolizer/html/), compiled in by the
 * build (embed.cmake). The template holds the markers {{STYLE}}, {{DATA}}
 * and {{SCRIPT}} where out_html.c puts the CSS, the profile and the script.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_HTML_ASSETS_H
#define EMBER_SYMBOLIZER_FORMATS_HTML_ASSETS_H

#include <stddef.h>

extern const char ember_html_page[];
extern const size_t ember_html_page_len;
extern const char ember_html_css[];
extern const size_t ember_html_css_len;
extern const char ember_html_js[];
extern const size_t ember_html_js_len;

#endif
