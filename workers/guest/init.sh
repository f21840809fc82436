#!/bin/sh
# memsweep's guest /init (busybox sh): load the pmem drivers, then for each line of /memsweep/configs
# ("ID MODE MAP ALIGN SIZE BINDS STRATEGY": fsdax|devdax, dev|mem, bytes, bytes, a count, a strategy name
# or "-") create a namespace of SIZE on the NVDIMM region, give it an fsdax (pfn) or devdax (dax)
# personality by sysfs, bind it BINDS times (unbinding in between, as the seed series' tests rebind the
# driver), measure each bind, tear it down, and print one line "MEMSWEEP-RESULT {json}" on /dev/ttyS1 (the
# host's results channel; the kernel console is ttyS0). A STRATEGY other than "-" is written first to the
# kernel's memmap_init_strategy parameter (a kernel built with the series, workers/guest/series). Before
# the configurations, /bin/memsweep-loop (when there) checks the instruction counter
# (workers/guest/counter.py) and its runs go out as "MEMSWEEP-COUNTER [[n, ns], ...]". Then power off. The sysfs steps follow ndctl (ndctl/namespace.c):
# setup_namespace() to create, namespace_destroy() to tear down; the host reads the lines
# (workers/guest/runner.py), the guest only reports what it saw.

export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
OUT=/dev/ttyS1
ND=/sys/bus/nd/devices
T=/sys/kernel/tracing
STRATEGY_PARAM=/sys/module/mm_init/parameters/memmap_init_strategy

say() { echo "memsweep: $*" > /dev/console; }
emit() { printf '%s\n' "$1" > $OUT; }
fatal() { emit "MEMSWEEP-FATAL $1"; say "fatal: $1"; sync; poweroff -f; }

# JSON for the host: jstr STRING is a string; jlines turns the lines on its stdin into a list of strings.
# Control characters are dropped; backslashes and quotes escaped.
JSON_ESC='{ gsub(/[\001-\037]/, ""); gsub(/\\/, "\\\\"); gsub(/"/, "\\\"") }'
jstr() { printf '%s\n' "$1" | awk "$JSON_ESC"' { s = s (NR > 1 ? " " : "") $0 } END { printf "\"%s\"", s }'; }
jlines() { awk 'BEGIN { printf "[" } '"$JSON_ESC"' { printf "%s\"%s\"", (NR > 1 ? ", " : ""), $0 } END { printf "]" }'; }

# w FILE VALUE: write VALUE to a sysfs FILE; on failure WHY holds "FILE=VALUE: error" and it returns 1.
# (ash's echo builtin reports the write's errno; its printf builtin fails silently.)
w() {
	if err=$( (echo "$2" > "$1") 2>&1 ); then return 0; fi
	WHY="${1#/sys/bus/nd/}=$2: ${err##*: }"
	return 1
}
rd() { cat "$1" 2>/dev/null; }
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

load_modules() {
	for m in $(cat /memsweep/modules); do
		out=$(insmod /lib/modules/$m.ko 2>&1) || fatal "insmod $m failed: $out"
	done
}

# The first NVDIMM region with labels (nstype 5, ND_DEVICE_NAMESPACE_PMEM), once the bus's async probing
# is over (ndctl_bus_wait_probe(): reading ndbusN/wait_probe flushes it).
find_region() {
	i=0
	while [ $i -lt 100 ]; do
		for b in $ND/ndbus*; do [ -e "$b/wait_probe" ] && cat "$b/wait_probe" > /dev/null; done
		for r in $ND/region*; do
			[ "$(rd $r/nstype)" = 5 ] && [ -e $r/namespace_seed ] && { REGION=${r##*/}; return 0; }
		done
		sleep 0.1; i=$((i + 1))
	done
	return 1
}

# function_graph on memmap_init_zone_device alone (set_ftrace_filter limits the patched call sites to it,
# max_graph_depth 1 keeps its callees out): each call leaves a line with its duration in microseconds.
setup_trace() {
	[ -d $T ] || return 1
	echo memmap_init_zone_device > $T/set_ftrace_filter &&
	echo memmap_init_zone_device > $T/set_graph_function &&
	echo 1 > $T/max_graph_depth &&
	echo function_graph > $T/current_tracer && echo 1 > $T/tracing_on
}

# ndctl's region_get_namespace(): the 0th namespace if it is idle, else the region's namespace seed.
pick_namespace() {
	ns0=${REGION#region}; ns0="namespace$ns0.0"
	if [ -e $ND/$ns0 ] && [ "$(rd $ND/$ns0/size)" = 0 ] && [ -z "$(rd $ND/$ns0/holder)" ]; then
		echo $ns0
	else
		rd $ND/$REGION/namespace_seed
	fi
}

uuid() { cat /proc/sys/kernel/random/uuid; }

# One configuration, as ndctl's setup_namespace(): the namespace's uuid and size (ndctl_namespace_set_size)
# and holder_class (ndctl_namespace_set_enforce_mode, opportunistic), then the region's pfn seed (fsdax) or
# dax seed (devdax): uuid, mode (ndctl_pfn_set_location: pmem = map=dev, ram = map=mem), align and
# namespace, and bind (util_bind() writes the name to a driver's bind: nd_pmem takes a pfn device,
# dax_pmem a dax device; dax_pmem's probe makes the dev_dax that device_dax binds). The bind runs
# nd_pfn_init() and memremap_pages(), where memmap_init_zone_device() runs.
run_config() {
	id=$1 mode=$2 map=$3 align=$4 size=$5 binds=$6 strategy=$7
	STATUS=ok STEP=namespace WHY= SEED= BEFORE= AFTER= TRACE='[]' REBINDS='[]' DEVRES= DEVSIZE= NSRES= NSSIZE= DAXDEV=
	if [ "$strategy" != - ]; then
		w $STRATEGY_PARAM $strategy || { STATUS=error WHY="this kernel has no strategy $strategy: $WHY"; return; }
	elif [ -e $STRATEGY_PARAM ]; then  # it chooses at run time, and no one said what: its rows would be mislabelled
		STATUS=error WHY="this kernel switches memmap_init_strategy at run time (now $(cat $STRATEGY_PARAM)), but was not named as one that does: give its build folder (with System.map) or series:6.12"
		return
	fi
	dmesg -c > /dev/null
	NS=$(pick_namespace)
	[ -n "$NS" ] || { STATUS=error WHY="no idle namespace in $REGION"; return; }
	if [ $mode = fsdax ]; then seedattr=pfn_seed driver=nd_pmem holder=pfn; else seedattr=dax_seed driver=dax_pmem holder=dax; fi
	if [ $map = dev ]; then loc=pmem; else loc=ram; fi
	w $ND/$NS/uuid "$(uuid)" || { STATUS=refused; return; }
	w $ND/$NS/size $size || { STATUS=refused WHY="$WHY (region align: $(rd $ND/$REGION/align))"; return; }
	w $ND/$NS/holder_class $holder; WHY=
	SEED=$(rd $ND/$REGION/$seedattr)
	[ -n "$SEED" ] || { STATUS=error WHY="$REGION has no $seedattr"; return; }
	STEP=configure
	w $ND/$SEED/uuid "$(uuid)" && w $ND/$SEED/mode $loc || { STATUS=refused; return; }
	if ! w $ND/$SEED/align $align; then
		STATUS=refused WHY="$WHY (supported_alignments: $(rd $ND/$SEED/supported_alignments))"; return
	fi
	w $ND/$SEED/namespace $NS || { STATUS=refused; return; }
	STEP=bind
	[ -w $T/trace ] && echo > $T/trace
	BEFORE=$(vmstat nr_memmap_pages)
	w /sys/bus/nd/drivers/$driver/bind $SEED || STATUS=refused
	AFTER=$(vmstat nr_memmap_pages)
	[ -r $T/trace ] && TRACE=$(grep -v '^#' $T/trace | jlines)
	# pfn_devs.c resource_show()/size_show(): res.start + start_pad + dataoff, and the size past it.
	DEVRES=$(rd $ND/$SEED/resource) DEVSIZE=$(rd $ND/$SEED/size)
	NSRES=$(rd $ND/$NS/resource) NSSIZE=$(rd $ND/$NS/size)
	if [ $mode = devdax ] && [ $STATUS = ok ]; then
		DAXDEV=$(ls -d /sys/bus/dax/devices/*/driver 2>/dev/null | head -n 1)
		[ -n "$DAXDEV" ] || { STATUS=refused WHY="dax_pmem bound $SEED but device_dax bound no dax device"; }
	fi
	[ $STATUS = ok ] && rebind $driver $binds
}

# The binds after the first: unbind the personality and bind it again (the series' "rebind the driver 30
# times"); REBINDS is a JSON list with each rebind's trace lines.
rebind() {
	r=1 lists=
	while [ $r -lt $2 ]; do
		w $ND/$SEED/driver/unbind $SEED || { STATUS=error WHY="unbind before bind $((r + 1)): $WHY"; break; }
		[ -w $T/trace ] && echo > $T/trace
		w /sys/bus/nd/drivers/$1/bind $SEED || { STATUS=error WHY="bind $((r + 1)): $WHY"; break; }
		lists="$lists${lists:+, }$(grep -v '^#' $T/trace 2>/dev/null | jlines)"
		r=$((r + 1))
	done
	REBINDS="[$lists]"
}

# ndctl's namespace_destroy(): disable the personality (ndctl_pfn_delete/ndctl_dax_delete: unbind, detach
# the namespace), holder_class "" (raw), zero the info block through the raw namespace (zero_info_block():
# force_raw, enable, write 8 KiB of zeros, disable), then size 0 (ndctl_namespace_delete(): the kernel
# drops the namespace's labels and frees its extent, so the next configuration starts from a clean region).
teardown() {
	TEARDOWN=
	if [ -n "$SEED" ]; then
		[ -e $ND/$SEED/driver ] && w $ND/$SEED/driver/unbind $SEED
		w $ND/$SEED/namespace ""
	fi
	[ -n "$NS" ] && [ "$(rd $ND/$NS/size)" != 0 ] || return 0
	w $ND/$NS/holder_class ""
	if w $ND/$NS/force_raw 1 && w /sys/bus/nd/drivers/nd_pmem/bind $NS; then
		blk=$(ls $ND/$NS/block 2>/dev/null)
		[ -n "$blk" ] && dd if=/dev/zero of=/dev/$blk bs=4096 count=2 oflag=direct 2>/dev/null
		w $ND/$NS/driver/unbind $NS
	fi
	w $ND/$NS/force_raw 0
	w $ND/$NS/size 0 || TEARDOWN="$WHY"
}

# Write the first MIB MiB of a raw namespace of SIZE once, before any measured bind. Each configuration's
# namespace starts at the same place in the region, and the first guest write to a page of the NVDIMM's
# backing file costs the host a page fault: without this, the first map=dev bind pays them inside
# memmap_init_zone_device() (190-250 ms of TCG time for 2 GiB, against 30-40 ms for the same bind again).
warm_up() {
	NS=$(pick_namespace) SEED=
	if w $ND/$NS/uuid "$(uuid)" && w $ND/$NS/size $1 && w $ND/$NS/force_raw 1 &&
		w /sys/bus/nd/drivers/nd_pmem/bind $NS; then
		dd if=/dev/zero of=/dev/$(ls $ND/$NS/block) bs=1M count=$2 oflag=direct 2>/dev/null
		w $ND/$NS/driver/unbind $NS
	else
		say "no warm-up: $WHY"
	fi
	teardown
}

emit_result() {
	emit "MEMSWEEP-RESULT {\"id\": $1, \"status\": \"$STATUS\", \"step\": \"$STEP\", \"why\": $(jstr "$WHY"),\
 \"namespace\": \"$NS\", \"device\": \"$SEED\", \"memmap_before\": \"$BEFORE\", \"memmap_after\": \"$AFTER\",\
 \"trace\": $TRACE, \"rebinds\": $REBINDS, \"ns_resource\": \"$NSRES\", \"ns_size\": \"$NSSIZE\", \"dev_resource\": \"$DEVRES\",\
 \"dev_size\": \"$DEVSIZE\", \"dmesg\": $DMESG, \"teardown\": $(jstr "$TEARDOWN")}"
}

say "started"
load_modules
find_region || fatal "no NVDIMM region with namespace labels (nstype 5): $(ls $ND 2>&1 | tr '\n' ' ')"
if setup_trace; then TRACING=true; else TRACING=false; say "no function_graph tracing: no init times"; fi
emit "MEMSWEEP-READY {\"release\": $(jstr "$(uname -r)"), \"cmdline\": $(jstr "$(cat /proc/cmdline)"),\
 \"region\": \"$REGION\", \"tracing\": $TRACING}"
if [ -r /memsweep/warmup ]; then
	warm_up $(cat /memsweep/warmup)
	[ -z "$TEARDOWN" ] || fatal "could not tear down the warm-up namespace ($TEARDOWN)"
fi
if [ -x /bin/memsweep-loop ]; then
	emit "MEMSWEEP-COUNTER [$(/bin/memsweep-loop | awk '{ printf "%s[%s, %s]", (NR > 1 ? ", " : ""), $1, $2 }')]"
fi
exec 3< /memsweep/configs
while read -r id mode map align size binds strategy <&3; do
	[ -n "$id" ] || continue
	say "config $id: $mode map=$map align=$align size=$size binds=$binds strategy=$strategy"
	run_config $id $mode $map $align $size $binds $strategy
	DMESG=$(dmesg | tail -n 40 | jlines)
	teardown
	emit_result $id
	[ -z "$TEARDOWN" ] || fatal "could not tear down configuration $id ($TEARDOWN): the region is not clean"
done
exec 3<&-
emit "MEMSWEEP-DONE"
say "done"
sync
poweroff -f
