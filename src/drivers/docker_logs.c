/* docker_logs: the engine's multiplexed log stream (no TTY) split into
 * stdout and stderr frames, and the timestamps that let a follower resume
 * after an agent restart without repeating lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "drivers/docker-int.h"

#define FRAME_MAX (1u << 20)    /* the engine splits lines at 16 KiB */

void docker_demux_init(struct docker_demux *d,
		       int (*on_frame)(void *arg, int stream, const char *data, size_t len),
		       void *arg)
{
	memset(d, 0, sizeof(*d));
	strbuf_init(&d->frame, 0);
	d->on_frame = on_frame;
	d->arg = arg;
}

void docker_demux_release(struct docker_demux *d)
{
	strbuf_release(&d->frame);
}

int docker_demux_feed(struct docker_demux *d, const char *data, size_t len)
{
	while (len) {
		if (d->hdr_len < 8) {
			size_t n = 8 - d->hdr_len < len ? 8 - d->hdr_len : len;
			memcpy(d->hdr + d->hdr_len, data, n);
			d->hdr_len += n;
			data += n;
			len -= n;
			if (d->hdr_len < 8)
				return 0;
			d->stream = d->hdr[0];
			d->left = (size_t)d->hdr[4] << 24 | (size_t)d->hdr[5] << 16 |
				  (size_t)d->hdr[6] << 8 | d->hdr[7];
			if (d->stream != 1 && d->stream != 2)
				return -EPROTO; /* stdin (0) is never sent; anything else is not a frame */
			strbuf_reset(&d->frame);
		}
		size_t n = d->left < len ? d->left : len;
		/* Frames are bounded by the engine; a longer one is passed on
		 * in pieces rather than held. */
		strbuf_add(&d->frame, data, n);
		data += n;
		len -= n;
		d->left -= n;
		if (d->left == 0 || d->frame.len >= FRAME_MAX) {
			int rc = d->on_frame(d->arg, d->stream, d->frame.buf, d->frame.len);
			strbuf_reset(&d->frame);
			if (rc < 0)
				return rc;
		}
		if (d->left == 0)
			d->hdr_len = 0;
	}
	return 0;
}

static int digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int docker_log_timestamp(const char *data, size_t len, int64_t *ns, size_t *skip)
{
	/* 2024-01-02T03:04:05[.fraction]Z followed by one space (the engine
	 * writes UTC with RFC3339Nano, trailing zeros of the fraction cut). */
	int y, mo, d, h, mi, s;
	if (len < 20 || data[4] != '-' || data[7] != '-' || data[10] != 'T' || data[13] != ':' ||
	    data[16] != ':' || digits(data, 4, &y) || digits(data + 5, 2, &mo) ||
	    digits(data + 8, 2, &d) || digits(data + 11, 2, &h) || digits(data + 14, 2, &mi) ||
	    digits(data + 17, 2, &s))
		return -EINVAL;
	size_t i = 19;
	int64_t frac = 0;
	int nd = 0;
	if (data[i] == '.') {
		for (i++; i < len && data[i] >= '0' && data[i] <= '9'; i++, nd++)
			if (nd < 9)
				frac = frac * 10 + (data[i] - '0');
		while (nd < 9) {
			frac *= 10;
			nd++;
		}
	}
	if (i >= len || data[i] != 'Z')
		return -EINVAL;
	i++;
	if (i < len && data[i] == ' ')
		i++;
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_sec = s };
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ns = (int64_t)t * 1000000000LL + frac;
	*skip = i;
	return 0;
}
