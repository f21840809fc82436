#!/bin/busybox sh
# /init of memsweep's /dev/mem probe (workers/guest/devmem.py): mounts what /devmem reads (procfs for VmPTE,
# debugfs for the page-table dump), says which kernel and switch it found, runs /devmem over /probe.conf
# (devmem.c says what a line does), reports any kernel complaint and powers off. The command line has
# oops=panic and panic_on_warn=1: an oops or a WARN ends the guest before "done", which the host reads as
# a failed run; check_mm()'s "BUG: Bad rss-counter state" and "BUG: non-zero pgtables_bytes" (a table
# leaked or freed twice) are pr_alert lines, passed on as "memsweep-devmem-dmesg" lines.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug || { echo "memsweep-devmem-fatal no debugfs"; poweroff -f; }
echo  # the firmware's last line ("Booting from ROM..") has no newline
echo "memsweep-devmem-release $(uname -r)"
echo "memsweep-devmem-switch $(cat /sys/module/kernel/parameters/remap_pfn_pmd 2>/dev/null || echo none)"
/devmem /probe.conf
dmesg | grep -E "BUG|WARNING|Oops|bad pmd|bad pte" | sed 's/^/memsweep-devmem-dmesg /'
echo "memsweep-devmem-end"
sync
poweroff -f
