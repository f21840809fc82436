#!/bin/busybox sh
# /init of memsweep's arm64 reclaim probe (workers/guest/arm64.py). Reads "LRU READAHEAD_KB HEAD MAPPED ALIGN
# YOUNG_BYTES RECLAIM" from /probe.conf (reclaim.c says what each does), mounts the XFS disk, counts the
# young-bit calls of the reclaim scan with kprobe events and hist triggers (Documentation/trace/histogram.rst;
# created paused, /reclaim lets them count during its memory.reclaim write only), runs /reclaim in a memory
# cgroup, then once more with no probe for the reclaim's own instructions, prints every result as a
# "memsweep-reclaim KEY VALUE" line on the console and powers off. Before
# the seed series (6.12) arm64 clears one PTE's young bit per call, contpte_ptep_test_and_clear_young() for a
# PTE of a contpte block; with it (7.3.4) folio_referenced_one() asks for a folio's PTEs at once,
# contpte_test_and_clear_young_ptes(..., nr).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing
say() { echo "memsweep-reclaim $*"; }
fail() { echo "memsweep-error $*"; poweroff -f; }
read LRU READAHEAD HEAD MAPPED ALIGN YOUNG_BYTES RECLAIM < /probe.conf
for m in /modules/*.ko; do [ -e "$m" ] && { insmod "$m" $(cat "$m.args" 2>/dev/null) || fail "insmod $m"; }; done
# the XFS disk on a RAM disk (drivers/block/brd.c): its reads complete in the submitting context, so where the
# guest's instructions go does not depend on when the host finishes an I/O, and a rerun repeats the counts
zcat /disk.img.gz > /dev/ram0 || fail "the XFS disk onto /dev/ram0"
sync  # the writes sit in /dev/ram0's page cache; XFS reads the RAM disk itself
mount -t xfs -o ro /dev/ram0 /mnt || fail "mount the XFS disk"
echo "$READAHEAD" > /sys/block/ram0/queue/read_ahead_kb || fail "read_ahead_kb"
if [ "$LRU" = classic ]; then echo n > /sys/kernel/mm/lru_gen/enabled || fail "lru_gen"; fi
# no khugepaged: it collapses the mapped file's folios into 2 MiB ones in the background (8 PMDs a pass,
# pages_to_scan 4096: 7.3 did, mm/khugepaged.c), a layout no point asks for
echo never > /sys/kernel/mm/transparent_hugepage/enabled || fail "transparent_hugepage"
mount -t cgroup2 none /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/probe
T=/sys/kernel/tracing
# a hist trigger on kprobe event $1, paused; /triggers lists it for /reclaim to start and stop
trigger() {
	echo "$2:pause" > $T/events/kprobes/$1/trigger || fail "hist trigger $1"
	echo "$T/events/kprobes/$1/trigger $2" >> /triggers
}
if grep -q " contpte_test_and_clear_young_ptes$" /proc/kallsyms; then
	YOUNG=contpte_test_and_clear_young_ptes
	echo "p:pages $YOUNG nr=\$arg4:u32" >> $T/kprobe_events || fail "kprobe $YOUNG"
	trigger pages 'hist:keys=nr:vals=hitcount'
else
	YOUNG=contpte_ptep_test_and_clear_young
fi
echo "r:calls $YOUNG ret=\$retval" >> $T/kprobe_events || fail "kretprobe $YOUNG"
trigger calls 'hist:keys=ret:vals=hitcount'
echo "r:visits folio_referenced_one ret=\$retval" >> $T/kprobe_events || fail "kretprobe folio_referenced_one"
trigger visits 'hist:keys=ret:vals=hitcount'
say release "$(uname -r)"
say function "$YOUNG"
say lru "$(cat /sys/kernel/mm/lru_gen/enabled)"
VMSTAT="pgscan_file|pgsteal_file|pgactivate|pgdeactivate|pgrefill"  # the reclaim's pages scanned, freed, moved
grep -E "^($VMSTAT) " /proc/vmstat | sed 's/^/memsweep-reclaim before_/'
echo $$ > /sys/fs/cgroup/probe/cgroup.procs
/reclaim /mnt/data "$HEAD" "$MAPPED" "$ALIGN" "$YOUNG_BYTES" /sys/fs/cgroup/probe/memory.reclaim "$RECLAIM" /triggers ||
	fail "reclaim"
grep -E "^($VMSTAT) " /proc/vmstat | sed 's/^/memsweep-reclaim after_/'
for e in calls pages visits; do
	[ -e $T/events/kprobes/$e/hist ] || continue
	grep -o '{ [a-z]*: *[0-9]* } hitcount: *[0-9]*' $T/events/kprobes/$e/hist | tr -d '{}:' | \
		while read key value _ count; do say "$e" "$value" "$count"; done
	grep -o 'Dropped: *[0-9]*' $T/events/kprobes/$e/hist | sed "s/Dropped: */memsweep-reclaim dropped_$e /"
done
# The same reclaim again with no probe: each kprobe hit above (a BRK trap, the handler, the hist trigger; a
# kretprobe's return trampoline too) runs thousands of instructions inside the write, more than the young
# function itself, so the instructions of the write above are mostly the probes'. Remove the triggers and the
# events (kernel/trace/trace_kprobe.c: an event with a trigger stays registered), drop the file's page cache
# (the mapping went with /reclaim) and lay it out and reclaim it again; its lines read clean_<key>.
while read file spec; do echo "!$spec" > "$file" || fail "remove a hist trigger"; done < /triggers
echo > $T/kprobe_events || fail "remove the kprobe events"
echo 3 > /proc/sys/vm/drop_caches || fail "drop_caches"
: > /none
grep -E "^($VMSTAT) " /proc/vmstat | sed 's/^/memsweep-reclaim clean_before_/'
/reclaim /mnt/data "$HEAD" "$MAPPED" "$ALIGN" "$YOUNG_BYTES" /sys/fs/cgroup/probe/memory.reclaim "$RECLAIM" /none \
	> /clean || { cat /clean; fail "reclaim without probes"; }
grep -E "^($VMSTAT) " /proc/vmstat | sed 's/^/memsweep-reclaim clean_after_/'
sed 's/^memsweep-reclaim /memsweep-reclaim clean_/' /clean
say done
poweroff -f
