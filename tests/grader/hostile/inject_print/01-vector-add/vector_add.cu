// HOSTILE (output injection; needs a GPU: only a test with a device calls a
// launcher): every launch prints, to stdout and stderr, what breaks naive
// report writers: bytes XML 1.0 forbids (U+FFFF, U+FFFE, a lone UTF-16
// surrogate, C0 controls, NUL), invalid UTF-8, `]]>` and closing tags,
// CSV formulas, Markdown fences and headings, raw HTML, ANSI escapes that
// clear a terminal, a right-to-left override, U+2028, and a 1 MiB line. The
// kernels are the skeleton's, so the checks fail and show what the test
// printed. Nothing here should score 0 by itself (the skeleton scores 0):
// the batch's junit.xml, roster.csv, results.json and report.md must stay
// valid and inert.
#include "vector_add.h"

#include <stdio.h>
#include <string.h>

#pragma hostile launcher_hook

static void hs_in_launcher(void)
{
    static const char junk[] =
        "hostile: \xEF\xBF\xBF \xEF\xBF\xBE \xED\xA0\x80 \x01\x02\x0b\x0c\x7f \xC0\xAF \xFF\xFE\n"
        "hostile: ]]></failure></testcase></testsuite><testcase name=\"forged\"/>&amp;&#0;\n"
        "hostile: =cmd|' /C calc'!A0,+SUM(1+1),-2+3,@SUM(1),\"=HYPERLINK(\"\"http://x\"\")\"\n"
        "hostile: ```\n# forged heading\n| forged | table |\n<script>alert(1)</script>"
        "<img src=x onerror=alert(1)>\n"
        "hostile: \x1b[2J\x1b[H\x1b[31mred\x1b[0m\x1b]0;title\x07 \r overwritten\n"
        "hostile: \xE2\x80\xAE" "fdp.exe \xE2\x80\xA8 \xE2\x80\xA9\n";
    fwrite(junk, 1, sizeof junk - 1, stdout);
    fwrite(junk, 1, sizeof junk - 1, stderr);
    fwrite("hostile: NUL\0byte\n", 1, 18, stdout);
    static char line[(1 << 20) + 2];
    memset(line, 'A', 1 << 20);
    line[1 << 20] = '\n';
    fwrite(line, 1, (1 << 20) + 1, stdout);
    fflush(stdout);
}

#pragma hostile skeleton
