/* memsweep's arm64 reclaim probe (workers/guest/arm64.py), run by reclaim.sh in the guest's memory cgroup.
 *
 * Maps a file of the guest's XFS disk shared and read-only, reads one byte of every 4 KiB page so each
 * page-cache folio is mapped by PTEs, then writes the amount to reclaim into its cgroup's memory.reclaim
 * (mm/memcontrol.c memory_reclaim() -> try_to_free_mem_cgroup_pages()): the reclaim scan visits the mapped
 * folios and asks, through folio_referenced() -> folio_referenced_one(), whether their PTEs are young. Under
 * QEMU's instruction counter one guest ns is one instruction, so the write's guest ns are the instructions
 * the reclaim executed. The mapping stays alive across the write.
 *
 * usage: reclaim FILE MEMORY_RECLAIM_FILE AMOUNT
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long guest_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	volatile const unsigned char *p;
	unsigned long sum = 0;
	long long before, after;
	struct stat st;
	ssize_t wrote;
	int fd, ctl;
	off_t at;

	if (argc != 4)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror("memsweep-error open");
		return 1;
	}
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("memsweep-error mmap");
		return 1;
	}
	for (at = 0; at < st.st_size; at += 4096)
		sum += p[at];
	ctl = open(argv[2], O_WRONLY);
	if (ctl < 0) {
		perror("memsweep-error memory.reclaim");
		return 1;
	}
	before = guest_ns();
	wrote = write(ctl, argv[3], strlen(argv[3]));
	after = guest_ns();
	printf("memsweep-reclaim mapped %lld\n", (long long)st.st_size);
	printf("memsweep-reclaim written %zd\n", wrote);
	printf("memsweep-reclaim instructions %lld\n", after - before);
	printf("memsweep-reclaim checksum %lu\n", sum);
	return wrote < 0;
}
