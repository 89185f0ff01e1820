/* banned.h: functions herd's code must not call, turned into compile errors.
 *
 * Included into every translation unit by the build (-include).  Each of
 * these has a safer replacement in src/common: strbuf_addf or snprintf for
 * sprintf/strcpy/strcat, strtoll with end checks (parse_int64) for atoi,
 * strtok_r or explicit scanning for strtok.  Inspired by git's banned.h. */
#ifndef HERD_BANNED_H
#define HERD_BANNED_H

/* The system headers first, so that their own declarations are not hit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gets
#define gets(x) BANNED(gets)

#endif
