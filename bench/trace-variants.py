#!/usr/bin/env python3
"""Variants of the openb trace that are not in its folder, to judge a placement
policy on data it was not designed with (docs/scheduling.md, "Held-out checks").

    /usr/bin/python3 bench/trace-variants.py OUT_DIR [TRACE_DIR]

TRACE_DIR defaults to $HERD_TRACES or ../shared/traces/openb.  Writes, each
from the default pod list and the GPU node list, with a fixed seed per variant
(the same files on every run):

  cpuonly2x  the CPU-only tasks twice
  cpuonly3x  the CPU-only tasks three times
  sub70      a random 70 % of the tasks
  cpu120     every task's CPU x 1.2 (rounded to a milli)
  cpu80      every task's CPU x 0.8
  spec20     20 % of the GPU tasks restricted (gpu_spec) to one model family,
             drawn with the family's share of the GPUs (G1|G2|G3, V100M16|V100M32,
             P100, T4, A10)
  nodes60    the full pod list on a random 60 % of the nodes (the replay inflates
             to 1.3 x the smaller capacity: fewer distinct tasks per GPU)
  no810      every 810-milli task replaced by a share drawn from the trace's
             other shares (460..650 mostly): the 810-milli sliver gone
  mix2       the sizes of the default list's sharing tasks redrawn uniformly
             from 100..900 milli in steps of 10 (shares the trace never has)

Each variant is a pod list openb_pod_list_NAME.csv (and for nodes60 a node list
openb_node_list_NAME.csv); run `herd sim --nodes ... --pods ...` on them."""
import csv
import os
import pathlib
import random
import sys

FAMILIES = [('G1|G2|G3', ('G1', 'G2', 'G3')), ('V100M16|V100M32', ('V100M16', 'V100M32')),
            ('P100', ('P100',)), ('T4', ('T4',)), ('A10', ('A10',))]


def read(path):
    with open(path, newline='') as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


def write(path, fields, rows):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator='\n')
        w.writeheader()
        w.writerows(rows)


def renamed(rows, tag):
    return [dict(r, name=f"{r['name']}-{tag}{i}") for i, r in enumerate(rows)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    src = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else
                       os.environ.get('HERD_TRACES', '../shared/traces/openb'))
    out.mkdir(parents=True, exist_ok=True)
    pf, pods = read(src / 'openb_pod_list_default.csv')
    nf, nodes = read(src / 'openb_node_list_gpu_node.csv')
    if 'gpu_spec' not in pf:
        pf = pf + ['gpu_spec']

    def emit(name, rows):
        write(out / f'openb_pod_list_{name}.csv', pf, rows)

    cpu_only = [r for r in pods if int(r['num_gpu']) == 0]
    emit('cpuonly2x', pods + renamed(cpu_only, 'a'))
    emit('cpuonly3x', pods + renamed(cpu_only, 'a') + renamed(cpu_only, 'b'))

    rnd = random.Random(70)
    emit('sub70', [r for r in pods if rnd.random() < 0.7])

    for name, k in (('cpu120', 1.2), ('cpu80', 0.8)):
        emit(name, [dict(r, cpu_milli=str(round(int(r['cpu_milli']) * k))) for r in pods])

    gpus = {fam: sum(int(n['gpu']) for n in nodes if n['model'] in models)
            for fam, models in FAMILIES}
    rnd = random.Random(20)
    rows = []
    for r in pods:
        r = dict(r)
        if int(r['num_gpu']) > 0 and rnd.random() < 0.2:
            r['gpu_spec'] = rnd.choices(list(gpus), weights=list(gpus.values()))[0]
        rows.append(r)
    emit('spec20', rows)

    rnd = random.Random(60)
    write(out / 'openb_node_list_nodes60.csv', nf, [n for n in nodes if rnd.random() < 0.6])
    emit('nodes60', pods)

    shares = [int(r['gpu_milli']) for r in pods
              if int(r['num_gpu']) == 1 and 0 < int(r['gpu_milli']) < 1000 and
              int(r['gpu_milli']) != 810]
    rnd = random.Random(810)
    emit('no810', [dict(r, gpu_milli=str(rnd.choice(shares)))
                   if int(r['num_gpu']) == 1 and int(r['gpu_milli']) == 810 else r
                   for r in pods])

    rnd = random.Random(2)
    emit('mix2', [dict(r, gpu_milli=str(rnd.randrange(100, 901, 10)))
                  if int(r['num_gpu']) == 1 and 0 < int(r['gpu_milli']) < 1000 else r
                  for r in pods])


if __name__ == '__main__':
    main()
