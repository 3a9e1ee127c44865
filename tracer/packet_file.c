/* Stream files that a kill never leaves unreadable.
 *
 * CTF readers (babeltrace2's ctf.fs, Trace Compass) cut a stream file into packets by the
 * packet_size of each header and refuse the whole trace when the last packet claims more
 * bytes than the file holds ("Invalid packet size"). A process killed (SIGKILL) in the middle
 * of an appending write() leaves exactly that: the kernel copies a write into the page cache
 * page by page and stops between two pages when a fatal signal is pending, and the file's
 * length grows with every page copied.
 *
 * So a stream file is always a sequence of complete packets at every instant:
 *
 *   [packet][packet]...[padding packet: header only, packet_size = to the end of the file]
 *
 * The file's length is a multiple of the page size; `end` is where the padding packet
 * begins. Appending a packet P:
 *   1. (if there is not room enough) grow the file by whole pages, each page a padding packet
 *      of its own, in one write: a write torn between two pages still ends on a packet
 *      boundary. Then rewrite the header at `end` so that its padding covers the new pages.
 *   2. write P's records and, after them, the header of the next padding packet, into the
 *      current padding packet's padding, which no reader looks at;
 *   3. commit: overwrite the header at `end` with P's header (80 bytes, never across a page
 *      boundary, so that no kill can cut it).
 * Each step leaves a file of complete packets; step 3 publishes P at once. A clean close cuts
 * the file after the last real packet (one ftruncate). A file is created under a hidden name
 * (readers skip names starting with '.') and renamed once it holds its first padding page, so
 * no reader ever sees an empty stream file.
 *
 * What this relies on: a write() of at most a page that does not cross a page boundary is not
 * torn by a signal, and a torn write ends on a page boundary (Linux generic_perform_write:
 * the fatal-signal check is made between pages/folios; ext4, xfs, btrfs, tmpfs). It is about
 * the process being killed; a power loss is another matter (vmst_flush does not fsync). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

#define HDR ((uint64_t)sizeof(struct vmst_packet))
#define GROW_MIN (64u << 10)
#define GROW_MAX (8u << 20)       /* a padding packet stays well below readers' packet limits */
#define TEMPLATE_SIZE (1u << 20)  /* padding pages written per write() when growing */

static uint64_t page_size(void)
{
	static uint64_t pg;
	if (!pg) {
		long v = sysconf(_SC_PAGESIZE);
		pg = v >= 4096 && v <= (64 << 10) ? (uint64_t)v : 4096;
	}
	return pg;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

static int pwrite_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int put_header(struct vmst_pfile *f, const struct vmst_packet *h, uint64_t at)
{
	struct iovec iov = { (void *)h, sizeof *h };
	return pwrite_all(f->fd, &iov, 1, at);
}

/* Grow the file to `to` bytes (a page multiple) with one padding packet per page, then let
 * the padding packet at `end` cover them. */
static int grow(struct vmst_pfile *f, uint64_t to)
{
	static uint8_t *tmpl;
	uint64_t pg = page_size();
	if (!tmpl && !(tmpl = calloc(1, TEMPLATE_SIZE)))
		return -ENOMEM;
	struct vmst_packet ph = f->pad;
	ph.content_size = HDR * 8;
	ph.packet_size = pg * 8;
	uint64_t seq = f->pad.packet_seq_num + 1;
	uint64_t at = f->size;
	while (at < to) {
		uint64_t chunk = to - at < TEMPLATE_SIZE ? to - at : TEMPLATE_SIZE;
		for (uint64_t p = 0; p < chunk; p += pg) {
			ph.packet_seq_num = seq++;
			memcpy(tmpl + p, &ph, sizeof ph);
		}
		struct iovec iov = { tmpl, (size_t)chunk };
		int rc = pwrite_all(f->fd, &iov, 1, at);
		if (rc) {
			/* e.g. ENOSPC in the middle of a page: cut back to the last whole page */
			off_t len = lseek(f->fd, 0, SEEK_END);
			if (len > (off_t)at && ftruncate(f->fd, (off_t)(at + ((uint64_t)len - at) / pg * pg)))
				rc = -errno;
			return rc;
		}
		at += chunk;
	}
	struct vmst_packet merged = f->pad;
	merged.packet_size = (to - f->end) * 8;
	int rc = put_header(f, &merged, f->end);
	if (rc)
		return rc;
	f->pad = merged;
	f->size = to;
	return 0;
}

int vmst_pfile_create(struct vmst_pfile *f, const char *dir, const char *name,
		      const struct vmst_packet *proto)
{
	char tmp[PATH_MAX], fin[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp ||
	    snprintf(fin, sizeof fin, "%s/%s", dir, name) >= (int)sizeof fin)
		return -ENAMETOOLONG;
	f->fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return -errno;
	uint64_t pg = page_size();
	f->end = 0;
	f->size = 0;
	f->pad = *proto;
	/* a padding packet takes no time: begin = end, so that packets never go back in time */
	f->pad.timestamp_end = f->pad.timestamp_begin;
	f->pad.content_size = HDR * 8;
	f->pad.packet_size = pg * 8;
	f->pad.packet_seq_num = 0;
	f->pad.events_discarded = 0;
	/* the first page, as a padding packet of its own, then the rest by grow() */
	struct vmst_packet first = f->pad;
	first.packet_seq_num = 0;
	int rc = put_header(f, &first, 0);
	if (rc == 0 && ftruncate(f->fd, (off_t)pg) != 0)
		rc = -errno;
	f->size = pg;
	if (rc == 0)
		rc = grow(f, GROW_MIN > pg ? round_up(GROW_MIN, pg) : pg);
	if (rc == 0 && rename(tmp, fin) != 0)
		rc = -errno;
	if (rc) {
		close(f->fd);
		unlink(tmp);
		f->fd = -1;
	}
	return rc;
}

int vmst_pfile_append(struct vmst_pfile *f, struct vmst_packet *h, const void *data, size_t len)
{
	static const uint8_t zeros[(64u << 10) + 8];   /* filler: < 8 bytes + a page */
	uint64_t pg = page_size();
	uint64_t total = HDR + len;
	uint64_t next = f->end + round_up(total, 8);
	/* the next header must not cross a page boundary (its write is the commit) */
	if (next % pg > pg - HDR)
		next = round_up(next, pg);
	if (next + HDR > f->size) {
		uint64_t extra = f->size / 8;
		extra = extra < GROW_MIN ? GROW_MIN : extra > GROW_MAX ? GROW_MAX : extra;
		uint64_t to = next + HDR > f->size + extra ? next + HDR : f->size + extra;
		int rc = grow(f, round_up(to, pg));
		if (rc)
			return rc;
	}
	h->packet_seq_num = f->pad.packet_seq_num;
	h->content_size = total * 8;
	h->packet_size = (next - f->end) * 8;
	struct vmst_packet np = *h;
	np.timestamp_begin = h->timestamp_end;
	np.packet_seq_num = h->packet_seq_num + 1;
	np.content_size = HDR * 8;
	np.packet_size = (f->size - next) * 8;
	/* records, filler up to the next packet, the next padding header: inside the padding */
	uint64_t fill = next - (f->end + total);
	struct iovec iov[3] = {
		{ (void *)data, len },
		{ (void *)zeros, (size_t)fill },
		{ &np, sizeof np },
	};
	int rc = pwrite_all(f->fd, iov, 3, f->end + HDR);
	if (rc == 0)
		rc = put_header(f, h, f->end);   /* the commit */
	if (rc)
		return rc;
	f->end = next;
	f->pad = np;
	return 0;
}

void vmst_pfile_close(struct vmst_pfile *f)
{
	if (f->fd < 0)
		return;
	/* nothing after the last packet; a file without any keeps its padding packet */
	if (f->end > 0 && ftruncate(f->fd, (off_t)f->end) != 0)
		fprintf(stderr, "vmstrace: cannot trim a stream file: %s\n", strerror(errno));
	close(f->fd);
	f->fd = -1;
}
