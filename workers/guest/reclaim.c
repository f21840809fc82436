/* memsweep's arm64 reclaim probe (workers/guest/arm64.py), run by reclaim.sh in the guest's memory cgroup.
 *
 * Lays out a file's page cache as the young model's point describes it, then has the cgroup reclaim part of
 * it (mm/memcontrol.c memory_reclaim() -> try_to_free_mem_cgroup_pages()), counting only that write:
 *
 * 1. read() the whole file: readahead (mm/readahead.c page_cache_ra_order()) makes its folios, growing their
 *    order window by window up to the readahead size, so the file's first windows hold smaller folios;
 * 2. drop the file's first HEAD bytes (POSIX_FADV_DONTNEED: clean, unmapped folios leave the page cache), so
 *    every folio left is of the readahead size and they sit on the LRU in file order;
 * 3. map the rest MAP_FIXED at ALIGN bytes past a 2 MiB boundary (set_pte_range() -> set_ptes(): arm64 folds
 *    a folio's 16-PTE blocks into contpte blocks where virtual and physical addresses agree modulo 64 KiB)
 *    and read one byte of every page, so every folio is mapped by PTEs;
 *    Then count the mapped folios by order (/proc/self/pagemap gives each page's frame, /proc/kpageflags its
 *    compound head and tail bits: fs/proc/page.c), so the host can check readahead made the order asked;
 * 4. write "1" to /proc/self/clear_refs (fs/proc/task_mmu.c clear_refs_pte_range(): every PTE old, every
 *    folio's PG_referenced clear); then zap the first YOUNG bytes' PTEs (MADV_DONTNEED: old PTEs leave the
 *    folios' flags alone, mm/memory.c zap_present_folio_ptes()) and read them again: mapped anew, their PTEs
 *    are young. A plain second read would not do: clear_refs flushes no TLB, so the reads hit the old
 *    translations and the MMU never sets the access flag;
 * 5. let the hist triggers count (each line of TRIGGERS: a trigger file and its spec, created paused by
 *    reclaim.sh), write AMOUNT into MEMORY_RECLAIM, pause them again.
 *
 * Under QEMU's instruction counter one guest ns is one instruction, so the write's guest ns are the
 * instructions the reclaim executed. The mapping stays alive across the write.
 *
 * usage: reclaim FILE HEAD MAPPED ALIGN YOUNG MEMORY_RECLAIM AMOUNT TRIGGERS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PMD_SIZE (2UL << 20)
#define PAGE 4096UL

static long long guest_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

#define KPF_COMPOUND_HEAD 15  /* include/uapi/linux/kernel-page-flags.h */
#define KPF_COMPOUND_TAIL 16
#define PM_PFN_MASK ((1ULL << 55) - 1)  /* Documentation/admin-guide/mm/pagemap.rst */
#define PM_PRESENT (1ULL << 63)

static int fail(const char *what)
{
	printf("memsweep-error %s\n", what);
	return 1;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Append ":cont" or ":pause" to every trigger of the TRIGGERS file (Documentation/trace/histogram.rst). */
static int triggers(const char *list, const char *verb)
{
	char line[512], text[512], *spec;
	FILE *f = fopen(list, "r");
	int bad = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		spec = strchr(line, ' ');
		if (!spec)
			continue;
		*spec++ = 0;
		snprintf(text, sizeof(text), "%s:%s", spec, verb);
		bad |= write_text(line, text);
	}
	fclose(f);
	return bad;
}

/* Print "memsweep-reclaim folio ORDER COUNT" for the folios mapping [p, p + len); -1 on a read failure. */
static int folio_orders(const volatile unsigned char *p, unsigned long len)
{
	unsigned long counts[32] = { 0 }, run = 0, at, order;
	unsigned long long entry, flags;
	int pm = open("/proc/self/pagemap", O_RDONLY), kf = open("/proc/kpageflags", O_RDONLY);

	if (pm < 0 || kf < 0)
		return -1;
	for (at = 0; at <= len; at += PAGE) {
		int head = 1;

		if (at < len) {
			if (pread(pm, &entry, 8, ((unsigned long)p + at) / PAGE * 8) != 8 || !(entry & PM_PRESENT))
				return -1;
			if (pread(kf, &flags, 8, (entry & PM_PFN_MASK) * 8) != 8)
				return -1;
			head = !(flags & (1ULL << KPF_COMPOUND_TAIL));
		}
		if (head && run) {  /* the folio before this page ends: run pages */
			for (order = 0; (1UL << order) < run; order++)
				;
			counts[(1UL << order) == run ? order : 31]++;  /* 31: not a power of two */
			run = 0;
		}
		run++;
	}
	close(pm);
	close(kf);
	for (order = 0; order < 32; order++)
		if (counts[order])
			printf("memsweep-reclaim folio %lu %lu\n", order, counts[order]);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long head, mapped, align, young, at, sum = 0;
	volatile const unsigned char *p;
	static char buf[1 << 20];
	long long before, after;
	unsigned char *space;
	ssize_t got, wrote;
	int fd, ctl;

	if (argc != 9)
		return 2;
	head = strtoul(argv[2], NULL, 0);
	mapped = strtoul(argv[3], NULL, 0);
	align = strtoul(argv[4], NULL, 0) % PMD_SIZE;
	young = strtoul(argv[5], NULL, 0);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return fail("open the file");
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		;
	if (got < 0)
		return fail("read the file");
	if (posix_fadvise(fd, 0, head, POSIX_FADV_DONTNEED))
		return fail("drop the file's head");
	/* a PMD-aligned address ALIGN bytes into a reserved range, for the mapping */
	space = mmap(NULL, mapped + 2 * PMD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (space == MAP_FAILED)
		return fail("reserve the address range");
	at = ((unsigned long)space + PMD_SIZE - 1) & ~(PMD_SIZE - 1);
	p = mmap((void *)(at + align), mapped, PROT_READ, MAP_SHARED | MAP_FIXED, fd, head);
	if (p == MAP_FAILED)
		return fail("map the file");
	for (at = 0; at < mapped; at += PAGE)
		sum += p[at];
	if (folio_orders(p, mapped))
		return fail("read the folios' orders");
	if (write_text("/proc/self/clear_refs", "1"))
		return fail("clear_refs");
	if (young && madvise((void *)p, young, MADV_DONTNEED))
		return fail("zap the young part");
	for (at = 0; at < young; at += PAGE)
		sum += p[at];
	ctl = open(argv[6], O_WRONLY);
	if (ctl < 0)
		return fail("open memory.reclaim");
	if (triggers(argv[8], "cont"))
		return fail("start the hist triggers");
	before = guest_ns();
	wrote = write(ctl, argv[7], strlen(argv[7]));
	after = guest_ns();
	if (triggers(argv[8], "pause"))
		return fail("stop the hist triggers");
	printf("memsweep-reclaim mapped %lu\n", mapped);
	printf("memsweep-reclaim written %zd\n", wrote);
	printf("memsweep-reclaim instructions %lld\n", after - before);
	printf("memsweep-reclaim checksum %lu\n", sum);
	return wrote < 0;
}
