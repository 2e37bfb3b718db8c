// HOSTILE (output injection through compiler errors): #error lines carrying
// what breaks naive report writers: bytes XML 1.0 forbids (U+FFFF, U+FFFE,
// a lone UTF-16 surrogate, C0 controls), invalid UTF-8, `]]>` and closing
// tags, CSV formulas, Markdown fences and raw HTML, ANSI escapes, a
// right-to-left override. The compile error scores 0; the expectation is
// that junit.xml, roster.csv, results.json and report.md stay valid and
// inert.
#include "vector_add.h"
#error "hostile ï¿¿ ï¿¾ í €  À¯ ]]></failure></testcase>"
#error "hostile =cmd|' /C calc'!A0 +SUM(1+1) @SUM(1) \" , \"=HYPERLINK()"
#error "hostile ```\n# forged heading <script>alert(1)</script> <img src=x onerror=alert(1)>"
#error "hostile [2J[H[31mred[0m ]0;title  overwritten â€®fdp.exe"
```
</testcase>

#pragma hostile skeleton
