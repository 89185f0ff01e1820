#!/bin/sh
# compare.sh: on a machine with a real NVIDIA GPU, compare `herd gpu list
# -json` with nvidia-smi.  Read only: it changes no MIG, clock or power
# setting.  Usage: tests/gpu/compare.sh [path/to/herd]   (exit 0: all match)
set -eu
HERD=${1:-build/src/cli/herd}
command -v nvidia-smi >/dev/null || { echo "compare: no nvidia-smi here"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$HERD" gpu list -json > "$tmp/herd.json"
nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap,driver_version,power.limit,clocks.max.sm,clocks.max.mem,persistence_mode,display_mode,mig.mode.current \
	--format=csv,noheader,nounits > "$tmp/smi.csv"
nvidia-smi > "$tmp/smi.txt" || true
python3 - "$tmp/herd.json" "$tmp/smi.csv" "$tmp/smi.txt" <<'PY'
import csv, json, re, sys
herd = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2]), skipinitialspace=True))
smi_text = open(sys.argv[3]).read()
bad = 0
def check(what, want, got):
    global bad
    ok = str(want).strip().lower() == str(got).strip().lower()
    bad += not ok
    print(f"{'ok ' if ok else 'BAD'} {what}: nvidia-smi {want!r} herd {got!r}")
nv = herd['nvml']
check('nvml loaded', True, nv['loaded'])
devs = {d['uuid']: d for d in herd['devices']}
cuda = re.search(r'CUDA Version: ([0-9.]+)', smi_text)
if cuda:
    check('cuda version', cuda.group(1), nv.get('cuda_version'))
for idx, uuid, name, mem, bus, cc, drv, plim, smclk, memclk, pm, dm, mig in rows:
    check(f'gpu {idx} driver', drv, nv.get('driver_version'))
    if mig.strip() == 'Enabled':
        kids = [d for d in herd['devices'] if d.get('parent_uuid') == uuid]
        print(f'    gpu {idx} in MIG mode: herd reports {len(kids)} instances')
        continue
    d = devs.get(uuid)
    if not d:
        check(f'gpu {idx} present', uuid, None)
        continue
    a = d['attributes']
    check(f'gpu {idx} name', name, d['name'])
    check(f'gpu {idx} memory MiB', mem, d.get('memory_mib'))
    check(f'gpu {idx} pci bus id', bus, a.get('pci_bus_id'))
    check(f'gpu {idx} compute capability', cc, a.get('compute_capability'))
    if plim not in ('[N/A]', '[Not Supported]'):
        check(f'gpu {idx} power limit W', int(float(plim)), int(a.get('power_limit', '-1 W').split()[0]))
    if smclk not in ('[N/A]',):
        check(f'gpu {idx} max sm clock', f'{smclk} MHz', a.get('max_sm_clock'))
        check(f'gpu {idx} max mem clock', f'{memclk} MHz', a.get('max_memory_clock'))
    if pm not in ('[N/A]',):
        check(f'gpu {idx} persistence', pm, a.get('persistence_mode'))
    if dm not in ('[N/A]',):
        check(f'gpu {idx} display mode', dm, a.get('display_mode'))
    check(f'gpu {idx} simulated', False, d['simulated'])
print('mismatches:', bad)
sys.exit(1 if bad else 0)
PY
