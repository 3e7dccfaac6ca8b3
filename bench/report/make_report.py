#!/usr/bin/python3
"""Builds one self-contained HTML page (inline CSS, inline SVG charts, no
network, no JavaScript library) from the benchmark results in bench/results.

    /usr/bin/python3 bench/report/make_report.py [--results DIR] [--out FILE]

Every *.json and *.jsonl file of DIR is read; each schema this script knows
(see PARSERS) is turned into measurements

    Measurement(op, size, series, ms, fusion)

(a time in milliseconds of one implementation -- "series": ephc, a peer,
ephc on a target -- for one op at one size) and ratios

    Ratio(op, size, label, value)

(as the bench wrote them: ephc against a peer, etc.). The page has, per
file, a summary table (device, date from the file name, rows) then one bar
chart per op (x: size, bars: the series, y: ms) and one chart of the file's
ratios; then the CPU vs GPU charts (an op timed by ephc on a CPU and on a
GPU, in any files) and the before/after fusion charts.

Fusion hook: a measurement is "fused" or "unfused" when its row has
`"fused": true/false`, `"fusion": "fused"/"unfused"` or
`"variant": "fused"/"unfused"`, or its file has `"fused": true/false` at the
top level or a "what" that says "fused". Fused and unfused series then chart
side by side in the op's chart (as "ephc vulkan (fused)" beside "ephc vulkan
(unfused)"), and every op and size that has both gets a before/after fusion
chart, whether the two come from one file or from two files whose names
differ only by a "_fused"/"_unfused" suffix.

Files of an unknown schema are listed on the page, not fatal. The output
depends only on the files' contents and names (sorted): no time stamps.
"""
import argparse
import html
import json
import math
import os
import re
import sys
from collections import OrderedDict, namedtuple

Measurement = namedtuple('Measurement', 'op size series ms fusion')
Ratio = namedtuple('Ratio', 'op size label value')


class Dataset:
    def __init__(self, name, schema, device, date, what=''):
        self.name = name
        self.schema = schema
        self.device = device
        self.date = date
        self.what = what
        self.columns = []
        self.rows = []  # table rows: lists of cells
        self.measurements = []
        self.ratios = []
        self.ratio_note = ''
        self.x_label = 'size'

    def measure(self, op, size, series, ms, fusion=None):
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and math.isfinite(ms) and ms > 0:
            self.measurements.append(Measurement(str(op), size, series, float(ms), fusion))

    def ratio(self, op, size, label, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            self.ratios.append(Ratio(str(op), size, label, float(value)))


# --------------------------------------------------------------- helpers

def fmt(v):
    if isinstance(v, bool):
        return 'yes' if v else 'no'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == 0:
            return '0'
        a = abs(v)
        if a >= 1e5 or a < 1e-3:
            return '%.3g' % v
        return ('%.4g' % v)
    return str(v)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return float('nan')
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def size_key(s):
    if isinstance(s, (int, float)):
        return (0, float(s), '')
    m = re.match(r'\D*?(\d+(?:\.\d+)?)', str(s))
    if m:
        return (1, float(m.group(1)), str(s))
    return (2, 0.0, '')  # names (a config): the file's order


def size_label(s):
    if isinstance(s, int):
        if s >= 65536 and s & (s - 1) == 0:
            return '2^%d' % (s.bit_length() - 1)
        return str(s) if s < 10000 else '{:,}'.format(s)
    return str(s)


def file_date(name):
    m = re.search(r'(\d{4}-\d{2}-\d{2})', name)
    return m.group(1) if m else ''


def fusion_of(row, file_fusion=None):
    if isinstance(row.get('fused'), bool):
        return 'fused' if row['fused'] else 'unfused'
    for k in ('fusion', 'variant'):
        v = row.get(k)
        if isinstance(v, str) and v.lower() in ('fused', 'unfused'):
            return v.lower()
    return file_fusion


def with_fusion(series, fusion):
    return '%s (%s)' % (series, fusion) if fusion else series


# --------------------------------------------------------------- parsers
# Each parser takes (name, data) -- data: the parsed JSON, or a list of the
# parsed lines of a .jsonl -- and returns a Dataset, or None when the schema
# is not its own.

def parse_cpu_bench(name, data):
    """bench/cpu: {host, rows: [{benchmark: "saxpy n=2^20", eph_cpu_ns, plain_ns, openblas_ns, eph_vs_*}]}"""
    if not (isinstance(data, dict) and isinstance(data.get('rows'), list) and data['rows']
            and all(isinstance(r, dict) and 'benchmark' in r and 'eph_cpu_ns' in r for r in data['rows'])):
        return None
    d = Dataset(name, 'cpu bench (eph_cpu_bench)', 'cpu: ' + str(data.get('host', '?')), file_date(name))
    d.columns = ['op', 'size', 'ephc ns', 'plain C++ ns', 'OpenBLAS ns', 'plain / ephc', 'OpenBLAS / ephc']
    d.ratio_note = 'eph_vs_X = X time / ephc time: above 1, ephc is faster.'
    for r in data['rows']:
        op, _, size = str(r['benchmark']).partition(' ')
        m = re.fullmatch(r'n=(\d+)(?:\^(\d+))?', size)
        if m:  # "n=2^20", "n=1024": the same sizes as the other files
            size = int(m.group(1)) ** int(m.group(2)) if m.group(2) else int(m.group(1))
        d.rows.append([op, size, r.get('eph_cpu_ns'), r.get('plain_ns'), r.get('openblas_ns'),
                       r.get('eph_vs_plain'), r.get('eph_vs_openblas')])
        for key, series in (('eph_cpu_ns', 'ephc cpu'), ('plain_ns', 'plain C++'), ('openblas_ns', 'OpenBLAS')):
            if isinstance(r.get(key), (int, float)):
                d.measure(op, size, series, r[key] / 1e6, fusion_of(r))
        d.ratio(op, size, 'eph_vs_plain', r.get('eph_vs_plain'))
        d.ratio(op, size, 'eph_vs_openblas', r.get('eph_vs_openblas'))
    return d


def parse_gpu_bench(name, data):
    """eph_gpu_bench + peers: {device, date, results: [{name, size, unit, eph: {median_ms, rate}, cuda?, torch?, ratio, ratio_cuda?}]}
    or flat results [{name, size, median_ms, rate}] (one implementation)."""
    if not (isinstance(data, dict) and isinstance(data.get('results'), list) and data['results']):
        return None
    rs = data['results']
    nested = all(isinstance(r, dict) and 'name' in r and 'size' in r and isinstance(r.get('eph'), dict) for r in rs)
    flat = all(isinstance(r, dict) and 'name' in r and 'size' in r and 'median_ms' in r for r in rs)
    if not (nested or flat):
        return None
    d = Dataset(name, 'GPU bench (eph_gpu_bench%s)' % (' + peers' if nested else ''),
                str(data.get('device', '?')), file_date(name), data.get('what', ''))
    peers = [p for p in ('cuda', 'torch') if any(isinstance(r.get(p), dict) for r in rs)] if nested else []
    d.columns = ['op', 'size', 'unit', 'ephc ms'] + ['%s ms' % p for p in peers] + ['ephc rate'] + \
        ['%s rate' % p for p in peers] + (['ratio (vs torch)'] if 'torch' in peers else []) + \
        (['ratio_cuda'] if 'cuda' in peers else [])
    d.ratio_note = 'ratio = ephc rate / PyTorch rate, ratio_cuda = ephc rate / CUDA rate: above 1, ephc is faster.'
    for r in rs:
        op, size, fu = r['name'], r['size'], fusion_of(r)
        if nested:
            row = [op, size, r.get('unit', ''), r['eph'].get('median_ms')]
            row += [(r.get(p) or {}).get('median_ms') for p in peers]
            row += [r['eph'].get('rate')] + [(r.get(p) or {}).get('rate') for p in peers]
            if 'torch' in peers:
                row.append(r.get('ratio'))
            if 'cuda' in peers:
                row.append(r.get('ratio_cuda'))
            d.rows.append(row)
            d.measure(op, size, with_fusion('ephc vulkan', fu), r['eph'].get('median_ms'), fu)
            for p, label in (('cuda', 'CUDA'), ('torch', 'PyTorch')):
                if isinstance(r.get(p), dict):
                    d.measure(op, size, label, r[p].get('median_ms'))
            d.ratio(op, size, 'ratio', r.get('ratio'))
            d.ratio(op, size, 'ratio_cuda', r.get('ratio_cuda'))
        else:
            d.rows.append([op, size, r.get('unit', ''), r.get('median_ms'), r.get('rate')])
            d.measure(op, size, with_fusion('ephc vulkan', fu), r.get('median_ms'), fu)
    if flat and not nested:
        d.columns = ['op', 'size', 'unit', 'ephc ms', 'ephc rate']
    return d


def parse_gpu_jsonl(name, data):
    """.jsonl of eph_gpu_bench runs: lines {name, size, median_ms, variant?, impl?, round?, process?};
    other lines (a run's header) are skipped. Repeated rounds: the median of their medians."""
    if not (isinstance(data, list) and name.endswith('.jsonl')):
        return None
    lines = [r for r in data if isinstance(r, dict) and 'name' in r and 'size' in r and 'median_ms' in r]
    if not lines:
        return None
    d = Dataset(name, 'GPU bench runs (.jsonl)', 'GPU', file_date(name))
    if name.startswith('h200'):
        d.device = 'NVIDIA H200'
    groups = OrderedDict()
    for r in lines:
        if r.get('variant') is not None:
            series = str(r['variant'])
        elif r.get('impl') is not None:
            series = str(r['impl'])
        elif r.get('process') is not None:
            series = 'process %s' % r['process']
        else:
            series = 'ephc'
        if r.get('impl') == 'cuda' and not series.startswith('cuda'):
            series = 'cuda:' + series
        fu = fusion_of(r)
        groups.setdefault((str(r['name']), r['size'], series, fu), []).append(r['median_ms'])
    d.columns = ['op', 'size', 'series', 'runs', 'median of median ms']
    for (op, size, series, fu), ms in sorted(groups.items(), key=lambda kv: (kv[0][0], size_key(kv[0][1]), kv[0][2])):
        d.rows.append([op, size, series, len(ms), median(ms)])
        d.measure(op, size, series, median(ms), fu)
    return d


def parse_overlap(name, data):
    """eph_overlap_bench: {device, rows: [{mib, upload_ms, compute_ms, overlap_ms, serial_ms, hidden}]}"""
    if not (isinstance(data, dict) and isinstance(data.get('rows'), list) and data['rows']
            and all(isinstance(r, dict) and 'mib' in r and 'overlap_ms' in r for r in data['rows'])):
        return None
    d = Dataset(name, 'upload/compute overlap (eph_overlap_bench)', str(data.get('device', '?')), file_date(name))
    d.x_label = 'buffer size'
    d.columns = ['op', 'size', 'upload ms', 'compute ms', 'overlapped ms', 'serial ms', 'hidden']
    d.ratio_note = 'hidden = share of the upload hidden behind compute (1: all of it).'
    for r in data['rows']:
        op, size = 'upload + compute', '%s MiB' % r['mib']
        d.rows.append([op, size, r.get('upload_ms'), r.get('compute_ms'), r.get('overlap_ms'), r.get('serial_ms'),
                       r.get('hidden')])
        for k in ('upload_ms', 'compute_ms', 'overlap_ms', 'serial_ms'):
            d.measure(op, size, k[:-3], r.get(k))
        d.ratio(op, size, 'hidden', r.get('hidden'))
    return d


def value_op(family, what):
    return 'value %s: %s' % (family, re.sub(r',.*$', '', str(what)).strip())


def parse_value_ephc(name, data):
    """eph_value_bench: {bench: eph_value_bench, target, family, what, results: [{residuals, wall_ms, gpu_ms}]}"""
    if not (isinstance(data, dict) and data.get('bench') == 'eph_value_bench' and isinstance(data.get('results'), list)):
        return None
    what = str(data.get('what', ''))
    file_fu = data['fused'] if isinstance(data.get('fused'), bool) else None
    file_fu = ('fused' if file_fu else 'unfused') if file_fu is not None else ('fused' if 'fused' in what else None)
    d = Dataset(name, 'Value graphs (eph_value_bench)', str(data.get('device', '?')), file_date(name), what)
    op = value_op(data.get('family', '?'), what)
    d.x_label = 'residuals'
    target = str(data.get('target', '?'))
    d.columns = ['op', 'size (residuals)', 'params', 'target', 'wall ms', 'GPU ms', 'residual error', 'gradient error']
    for r in data['results']:
        fu = fusion_of(r, file_fu)
        d.rows.append([op, r.get('residuals'), r.get('params'), target, r.get('wall_ms'), r.get('gpu_ms'),
                       r.get('residual_error'), r.get('gradient_error')])
        d.measure(op, r.get('residuals'), with_fusion('ephc %s wall' % target, fu), r.get('wall_ms'), fu)
        d.measure(op, r.get('residuals'), with_fusion('ephc %s GPU' % target, fu), r.get('gpu_ms'), fu)
    return d


def parse_value_torch(name, data):
    """bench/device/torch_value.py: {bench: torch_value, family, results: [{residuals, eager: {ms}, compiled: {ms}, ephc_wall_ms, speedup_*}]}"""
    if not (isinstance(data, dict) and data.get('bench') == 'torch_value' and isinstance(data.get('results'), list)):
        return None
    d = Dataset(name, 'Value graphs: PyTorch autograd (torch_value.py)', str(data.get('device', '?')), file_date(name))
    op = value_op(data.get('family', '?'), 'residuals + gradient of the sum')
    d.x_label = 'residuals'
    d.columns = ['op', 'size (residuals)', 'eager ms', 'compiled ms', 'ephc wall ms', 'ephc GPU ms',
                 'wall vs eager', 'GPU vs eager', 'wall vs compiled']
    d.ratio_note = 'speedup_X = PyTorch time / ephc time: above 1, ephc is faster.'
    for r in data['results']:
        size = r.get('residuals')
        eager, comp = (r.get('eager') or {}).get('ms'), (r.get('compiled') or {}).get('ms')
        d.rows.append([op, size, eager, comp, r.get('ephc_wall_ms'), r.get('ephc_gpu_ms'), r.get('speedup_wall_vs_eager'),
                       r.get('speedup_gpu_vs_eager'), r.get('speedup_wall_vs_compiled')])
        d.measure(op, size, 'PyTorch eager', eager)
        d.measure(op, size, 'PyTorch compiled', comp)
        d.measure(op, size, 'ephc vulkan wall', r.get('ephc_wall_ms'))
        d.measure(op, size, 'ephc vulkan GPU', r.get('ephc_gpu_ms'))
        for k in ('speedup_wall_vs_eager', 'speedup_gpu_vs_eager', 'speedup_wall_vs_compiled'):
            d.ratio(op, size, k, r.get(k))
    return d


def parse_value_ceres(name, data):
    """eph_value_ceres_bench: {bench, device, threads, results: [{family, residuals, ephc_ms, ceres_evaluate_ms, ceres_loop_ms, ratio_vs_*}]}"""
    if not (isinstance(data, dict) and data.get('bench') == 'eph_value_ceres_bench' and isinstance(data.get('results'), list)):
        return None
    d = Dataset(name, 'Value graphs vs Ceres (eph_value_ceres_bench)', str(data.get('device', '?')), file_date(name),
                str(data.get('unit', '')))
    d.x_label = 'residuals'
    d.columns = ['op', 'size (residuals)', 'ephc ms', 'ephc kernels ms', 'Ceres Evaluate ms', 'Ceres loop ms',
                 'Evaluate / ephc', 'loop / ephc']
    d.ratio_note = 'ratio_vs_X = Ceres time / ephc time: above 1, ephc is faster.'
    for r in data['results']:
        op, size = value_op(r.get('family', '?'), 'residuals + Jacobian'), r.get('residuals')
        d.rows.append([op, size, r.get('ephc_ms'), r.get('ephc_kernels_ms'), r.get('ceres_evaluate_ms'),
                       r.get('ceres_loop_ms'), r.get('ratio_vs_evaluate'), r.get('ratio_vs_loop')])
        fu = fusion_of(r)
        d.measure(op, size, with_fusion('ephc cpu', fu), r.get('ephc_ms'), fu)
        d.measure(op, size, with_fusion('ephc cpu kernels', fu), r.get('ephc_kernels_ms'), fu)
        d.measure(op, size, 'Ceres Evaluate', r.get('ceres_evaluate_ms'))
        d.measure(op, size, 'Ceres loop', r.get('ceres_loop_ms'))
        d.ratio(op, size, 'ratio_vs_evaluate', r.get('ratio_vs_evaluate'))
        d.ratio(op, size, 'ratio_vs_loop', r.get('ratio_vs_loop'))
    return d


def parse_startup(name, data):
    """bench/startup_bench.py: {program, label, rows: [{config, wall_s, cpu_s, wall_vs_interp}]}"""
    if not (isinstance(data, dict) and isinstance(data.get('rows'), list) and data['rows']
            and all(isinstance(r, dict) and 'config' in r and 'wall_s' in r for r in data['rows'])):
        return None
    d = Dataset(name, 'start-up (startup_bench.py)', 'host %s, %s cpus' % (data.get('host', '?'), data.get('cpus', '?')),
                file_date(name), str(data.get('label', '')))
    op = 'ephc run %s' % os.path.basename(str(data.get('program', '?')))
    d.x_label = 'config'
    d.columns = ['op', 'config', 'wall ms', 'CPU ms', 'runs', 'wall / interp']
    d.ratio_note = 'wall_vs_interp = wall time / the interpreter\'s: above 1, slower to start than interp.'
    for r in data['rows']:
        size = str(r['config'])
        wall, cpu = r.get('wall_s'), r.get('cpu_s')
        d.rows.append([op, size, wall * 1e3 if isinstance(wall, (int, float)) else wall,
                       cpu * 1e3 if isinstance(cpu, (int, float)) else cpu, r.get('runs'), r.get('wall_vs_interp')])
        if isinstance(wall, (int, float)):
            d.measure(op, size, 'wall', wall * 1e3)
        if isinstance(cpu, (int, float)):
            d.measure(op, size, 'CPU', cpu * 1e3)
        d.ratio(op, size, 'wall_vs_interp', r.get('wall_vs_interp'))
    return d


def parse_tensor(name, data):
    """eph_tensor_bench --json (and torch_tensor.py's): [{op, size, target, kernels, ephc_ms, numpy_ms, torch_ms?, error}];
    -1 means not measured. Rows may carry "fused"/"fusion" (the fusion hook)."""
    if not (isinstance(data, list) and data and not name.endswith('.jsonl')
            and all(isinstance(r, dict) and 'op' in r and 'ephc_ms' in r for r in data)):
        return None
    d = Dataset(name, 'tensor ops (eph_tensor_bench)', '', file_date(name))
    has_torch = any('torch_ms' in r for r in data)
    d.columns = ['op', 'size', 'target', 'fusion', 'kernels', 'ephc ms', 'numpy ms'] + (['PyTorch ms'] if has_torch else []) + \
        ['peer / ephc', 'error']
    d.ratio_note = 'numpy (or PyTorch) time / ephc time: above 1, ephc is faster.'
    targets = set()
    for r in data:
        op, size, target, fu = r['op'], r.get('size', ''), str(r.get('target', '?')), fusion_of(r)
        targets.add(target)
        peer_ms = r.get('torch_ms') if has_torch else r.get('numpy_ms')
        ratio = peer_ms / r['ephc_ms'] if isinstance(peer_ms, (int, float)) and peer_ms > 0 and \
            isinstance(r['ephc_ms'], (int, float)) and r['ephc_ms'] > 0 else None
        d.rows.append([op, size, target, fu or '', r.get('kernels'), r.get('ephc_ms'), r.get('numpy_ms')] +
                      ([r.get('torch_ms')] if has_torch else []) + [ratio, r.get('error', '')])
        d.measure(op, size, with_fusion('ephc %s' % target, fu), r.get('ephc_ms'), fu)
        d.measure(op, size, 'numpy', r.get('numpy_ms'))  # the peer's time: once per op and size (below)
        if has_torch:
            d.measure(op, size, 'PyTorch', r.get('torch_ms'))
        d.ratio(op, size, with_fusion('%s / ephc %s' % ('PyTorch' if has_torch else 'numpy', target), fu), ratio)
    d.measurements = list(OrderedDict(((m.op, m.size, m.series), m) for m in d.measurements).values())
    d.device = '%s, targets %s' % (name.split('-')[0], ', '.join(sorted(targets)))
    return d


def parse_bert(name, data):
    """bench/device/bert.sh: [{model, ephc: (an eph_tensor_bench --onnx row: kernels, ephc_ms, wall_ms, ...),
    torch: {device, ms}}]: a model end to end, ephc against PyTorch eager."""
    if not (isinstance(data, list) and data and all(isinstance(r, dict) and 'model' in r and
                                                   isinstance(r.get('ephc'), dict) and isinstance(r.get('torch'), dict)
                                                   for r in data)):
        return None
    d = Dataset(name, 'ONNX models end to end (bench/device/bert.sh)', '%s, vulkan' % name.split('-')[0], file_date(name))
    d.x_label = 'model'
    d.columns = ['op', 'model', 'kernels', 'ephc GPU ms', 'ephc wall ms', 'PyTorch ms', 'PyTorch / ephc (wall)',
                 'max error']
    d.ratio_note = 'PyTorch eager time / ephc wall time: above 1, ephc is faster.'
    op = 'BERT-like encoder'
    for r in data:
        e, t = r['ephc'], r['torch']
        wall, peer = e.get('wall_ms'), t.get('ms')
        ratio = peer / wall if isinstance(peer, (int, float)) and isinstance(wall, (int, float)) and wall > 0 else None
        d.rows.append([op, r['model'], e.get('kernels'), e.get('ephc_ms'), wall, peer, ratio, e.get('max_rel_error')])
        d.measure(op, r['model'], 'ephc vulkan GPU', e.get('ephc_ms'))
        d.measure(op, r['model'], 'ephc vulkan wall', wall)
        d.measure(op, r['model'], 'PyTorch %s' % t.get('device', 'cuda'), peer)
        d.ratio(op, r['model'], 'PyTorch / ephc wall', ratio)
    return d


PARSERS = [parse_cpu_bench, parse_gpu_bench, parse_gpu_jsonl, parse_overlap, parse_value_ephc, parse_value_torch,
           parse_value_ceres, parse_startup, parse_tensor, parse_bert]


def load(path):
    name = os.path.basename(path)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    if name.endswith('.jsonl'):
        data = []
        for line in text.splitlines():
            if line.strip():
                data.append(json.loads(line))
        return data
    return json.loads(text)


def read_results(results_dir):
    datasets, unknown = [], []
    for name in sorted(os.listdir(results_dir)):
        if not (name.endswith('.json') or name.endswith('.jsonl')):
            continue
        try:
            data = load(os.path.join(results_dir, name))
        except (ValueError, OSError) as e:
            unknown.append((name, 'not readable JSON: %s' % e))
            continue
        for parse in PARSERS:
            try:
                d = parse(name, data)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                d = None
                unknown.append((name, '%s failed: %s' % (parse.__name__, e)))
                break
            if d is not None:
                datasets.append(d)
                break
        else:
            unknown.append((name, 'schema not known to make_report.py'))
    return datasets, unknown


# --------------------------------------------------------------- charts

PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
           '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#3182bd']


def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def tick_label(v):
    if v == 0:
        return '0'
    a = abs(v)
    if a >= 1e4 or a < 1e-2:
        return '%.0e' % v if abs(v / 10 ** round(math.log10(a)) - 1) < 1e-9 else '%.1e' % v
    return ('%.3f' % v).rstrip('0').rstrip('.')


class Chart:
    """A grouped bar chart: groups (x), each with one bar per series."""

    def __init__(self, cid, title, x_label, y_label, groups, series, values, ref_line=None, note=''):
        self.cid, self.title, self.x_label, self.y_label = cid, title, x_label, y_label
        self.groups, self.series, self.values = groups, series, values  # values: {(group, series): v}
        self.ref_line, self.note = ref_line, note

    def svg(self):
        vals = [v for v in self.values.values() if v > 0]
        n_series = max(1, len(self.series))
        group_w = max(48, 14 * n_series + 16)
        longest = max([len(s) for s in self.series] + [1])
        left, right, top = 78, 16, 34
        width = max(520, left + right + group_w * len(self.groups), int(7.9 * len(self.title)) + left + right,
                    int(6.6 * longest) + 40 + left + right)
        cols = max(1, min(3, int((width - left - right) // (6.6 * longest + 24))))
        legend_h = 18 * ((len(self.series) + cols - 1) // cols)
        plot_h = 220
        group_w = (width - left - right) / len(self.groups)
        x_rot = any(len(str(g)) > 12 for g in self.groups) or group_w < 7 * max(len(str(g)) for g in self.groups) + 6
        bottom = (110 if x_rot else 56) + legend_h
        height = top + plot_h + bottom
        lo, hi = min(vals), max(vals)
        if self.ref_line:
            lo, hi = min(lo, self.ref_line), max(hi, self.ref_line)
        log = hi / lo > 50
        if log:
            e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
            if e1 == e0:
                e1 += 1
            ticks = [10.0 ** e for e in range(e0, e1 + 1)]
            y0, y1 = 10.0 ** e0, 10.0 ** e1

            def ypos(v):
                return top + plot_h - plot_h * (math.log10(v) - e0) / (e1 - e0)
        else:
            ticks = nice_ticks(0, hi)
            y0, y1 = 0.0, ticks[-1]

            def ypos(v):
                return top + plot_h - plot_h * (v - y0) / (y1 - y0)
        base = top + plot_h
        out = []
        a = out.append
        a('<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
          'role="img" aria-labelledby="%s-t" data-bars="%d">' % (self.cid, width, height, width, height, self.cid,
                                                                  len(self.values)))
        a('<title id="%s-t">%s</title>' % (self.cid, esc(self.title)))
        a('<text class="chart-title" x="%d" y="20">%s</text>' % (left, esc(self.title)))
        for t in ticks:
            y = ypos(t)
            a('<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>' % (left, y, width - right, y))
            a('<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, y + 4, tick_label(t)))
        if self.ref_line:
            y = ypos(self.ref_line)
            a('<line class="ref" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>' % (left, y, width - right, y))
        a('<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>' % (left, top, left, base))
        a('<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>' % (left, base, width - right, base))
        bar_w = min(28.0, (group_w - 12) / n_series)
        for gi, g in enumerate(self.groups):
            gx = left + gi * group_w + (group_w - bar_w * n_series) / 2
            for si, s in enumerate(self.series):
                v = self.values.get((g, s))
                if v is None or v <= 0:
                    continue
                y = max(top, min(base, ypos(max(v, y0))))
                a('<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" data-group="%s" '
                  'data-series="%s" data-value="%s"><title>%s, %s: %s</title></rect>'
                  % (gx + si * bar_w, y, max(bar_w - 1, 1), max(base - y, 0.5), PALETTE[si % len(PALETTE)],
                     esc(g), esc(s), repr(v), esc(g), esc(s), fmt(v)))
            cx = gx + bar_w * n_series / 2
            if x_rot:
                a('<text class="tick" x="%.1f" y="%d" text-anchor="end" transform="rotate(-35 %.1f %d)">%s</text>'
                  % (cx, base + 14, cx, base + 14, esc(g)))
            else:
                a('<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>' % (cx, base + 16, esc(g)))
        xl_y = base + (96 if x_rot else 38)
        a('<text class="axis-label x-label" x="%.1f" y="%d" text-anchor="middle">%s</text>'
          % (left + (width - left - right) / 2, xl_y, esc(self.x_label)))
        a('<text class="axis-label y-label" x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s%s</text>'
          % (top + plot_h / 2, top + plot_h / 2, esc(self.y_label), ' (log scale)' if log else ''))
        for si, s in enumerate(self.series):
            lx = left + (si % cols) * ((width - left - right) / cols)
            ly = xl_y + 16 + 18 * (si // cols)
            a('<rect class="swatch" x="%.1f" y="%d" width="10" height="10" fill="%s"/>' % (lx, ly - 9, PALETTE[si % len(PALETTE)]))
            a('<text class="legend" x="%.1f" y="%d">%s</text>' % (lx + 14, ly, esc(s)))
        a('</svg>')
        return '\n'.join(out)


def esc(s):
    return html.escape(str(s), quote=True)


def slug(s):
    return re.sub(r'[^a-z0-9]+', '-', str(s).lower()).strip('-')


def ordered(xs):
    return list(OrderedDict((x, None) for x in xs))


def op_charts(d, prefix):
    """One chart per op: x the sizes, bars the series (times in ms)."""
    charts = []
    for op in ordered(m.op for m in d.measurements):
        ms = [m for m in d.measurements if m.op == op]
        sizes = sorted(ordered(m.size for m in ms), key=size_key)
        series = ordered(m.series for m in ms)
        values = {(size_label(m.size), m.series): m.ms for m in ms}
        charts.append(Chart('%s-%s' % (prefix, slug(op)), '%s: time per %s' % (op, d.x_label), d.x_label, 'time (ms)',
                            [size_label(s) for s in sizes], series, values))
    return charts


def ratio_chart(d, prefix):
    if not d.ratios:
        return None
    groups = ordered('%s %s' % (r.op, size_label(r.size)) if len(set(x.op for x in d.ratios)) > 1 else size_label(r.size)
                     for r in d.ratios)
    labels = ordered(r.label for r in d.ratios)
    values = {}
    for r in d.ratios:
        g = '%s %s' % (r.op, size_label(r.size)) if len(set(x.op for x in d.ratios)) > 1 else size_label(r.size)
        values[(g, r.label)] = r.value
    return Chart('%s-ratios' % prefix, '%s: ratios' % d.name, 'op and %s' % d.x_label, 'ratio', groups, labels, values,
                 ref_line=1.0, note=d.ratio_note)


def is_cpu(device):
    return str(device).lower().startswith('cpu')


def cpu_gpu_charts(datasets):
    """An op that ephc timed on a CPU device and on a GPU device (any files): one chart, a series per file."""
    by_op = OrderedDict()
    for d in datasets:
        for m in d.measurements:
            if m.series.startswith('ephc') and 'kernels' not in m.series:
                by_op.setdefault(m.op, []).append((d, m))
    charts = []
    for op, items in sorted(by_op.items()):
        kinds = set(is_cpu(d.device) for d, _ in items)
        if kinds != {True, False}:
            continue
        # one series per (file, series) -- wall time only where a file has both wall and GPU
        values, series, sizes = {}, [], []
        for d, m in items:
            if m.series.endswith(' GPU'):
                continue
            s = '%s: %s' % ('cpu' if is_cpu(d.device) else 'gpu', d.name.rsplit('.', 1)[0])
            s = '%s [%s]' % (s, m.series)
            series.append(s)
            sizes.append(m.size)
            values[(size_label(m.size), s)] = m.ms
        sizes = sorted(ordered(sizes), key=size_key)
        charts.append(Chart('cpu-gpu-%s' % slug(op), '%s: CPU vs GPU' % op, 'size', 'time (ms)',
                            [size_label(s) for s in sizes], ordered(series), values))
    return charts


def fusion_stem(name):
    stem = name.rsplit('.', 1)[0]
    return re.sub(r'[_-](un)?fused$', '', stem)


def fusion_charts(datasets):
    """Every op and size with both fused and unfused times (one file, or two files whose names differ only by a
    _fused/_unfused suffix): a chart per op, x the sizes, bars before (unfused) and after (fused)."""
    pairs = OrderedDict()
    for d in datasets:
        stem = fusion_stem(d.name)
        files = [x for x in datasets if fusion_stem(x.name) == stem]
        for m in d.measurements:
            base = m.series.replace(' (fused)', '').replace(' (unfused)', '')
            fu = m.fusion
            if fu is None and len(files) > 1:
                fu = 'unfused'  # the file beside a _fused one is the before
            if fu is None:
                continue
            pairs.setdefault((stem, m.op), {}).setdefault((m.size, base), {})[fu] = m.ms
    charts = []
    for (stem, op), cells in pairs.items():
        both = {k: v for k, v in cells.items() if 'fused' in v and 'unfused' in v}
        if not both:
            continue
        sizes = sorted(ordered(k[0] for k in both), key=size_key)
        series, values = [], {}
        for (size, base), v in both.items():
            for fu, label in (('unfused', 'before (unfused)'), ('fused', 'after (fused)')):
                s = '%s, %s' % (base, label)
                series.append(s)
                values[(size_label(size), s)] = v[fu]
        charts.append(Chart('fusion-%s-%s' % (slug(stem), slug(op)), '%s: before/after fusion (%s)' % (op, stem),
                            'size', 'time (ms)', [size_label(s) for s in sizes], ordered(series), values))
    return charts


# --------------------------------------------------------------- page

CSS = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; text-align: center; } td.t { text-align: left; }
.meta { color: #555; font-size: 0.9em; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg.chart { background: #fff; border: 1px solid #ddd; }
svg .chart-title { font-size: 13px; font-weight: bold; }
svg .tick, svg .legend { font-size: 11px; fill: #333; }
svg .axis-label { font-size: 12px; fill: #111; }
svg .axis { stroke: #333; stroke-width: 1; }
svg .grid { stroke: #e4e4e4; stroke-width: 1; }
svg .ref { stroke: #c00; stroke-width: 1; stroke-dasharray: 4 3; }
.note { font-size: 0.85em; color: #444; }
"""

# Checks, in the browser, that every chart rendered (a nonzero bounding box,
# and as many bars as it declares), and counts console errors and uncaught
# errors; the result is written to <body data-...> and document.title, which
# `chromium --headless --dump-dom` shows (bench/report/check_chromium.py).
SCRIPT = """
(function () {
  var errors = 0;
  var origError = console.error;
  console.error = function () { errors++; return origError.apply(console, arguments); };
  window.addEventListener('error', function () { errors++; });
  window.addEventListener('load', function () {
    var charts = document.querySelectorAll('svg.chart');
    var ok = 0, bad = [];
    for (var i = 0; i < charts.length; i++) {
      var c = charts[i], b = c.getBBox();
      var bars = c.querySelectorAll('rect.bar'), barsOk = bars.length > 0;
      for (var j = 0; j < bars.length; j++) {
        var bb = bars[j].getBBox();
        if (!(bb.width > 0 && bb.height > 0)) barsOk = false;
      }
      if (b.width > 0 && b.height > 0 && barsOk && bars.length == +c.getAttribute('data-bars')) ok++;
      else bad.push(c.id);
    }
    document.body.setAttribute('data-charts-total', String(charts.length));
    document.body.setAttribute('data-charts-rendered', String(ok));
    document.body.setAttribute('data-charts-bad', bad.join(' '));
    document.body.setAttribute('data-console-errors', String(errors));
    document.title = 'charts rendered ' + ok + '/' + charts.length + ', console errors ' + errors;
  });
})();
"""


def table(columns, rows):
    out = ['<table><tr>%s</tr>' % ''.join('<th>%s</th>' % esc(c) for c in columns)]
    for r in rows:
        out.append('<tr>%s</tr>' % ''.join('<td%s>%s</td>' % ('' if isinstance(v, (int, float)) and not isinstance(v, bool)
                                                             else ' class="t"', esc(fmt(v) if v is not None else ''))
                                           for v in r))
    out.append('</table>')
    return '\n'.join(out)


def build(results_dir):
    datasets, unknown = read_results(results_dir)
    sections, n_charts = [], 0
    toc = []
    for i, d in enumerate(datasets):
        prefix = 'f%d' % i
        charts = op_charts(d, prefix)
        rc = ratio_chart(d, prefix)
        if rc:
            charts.append(rc)
        n_charts += len(charts)
        toc.append('<tr><td class="t"><a href="#%s">%s</a></td><td class="t">%s</td><td class="t">%s</td>'
                   '<td class="t">%s</td><td>%d</td><td>%d</td></tr>'
                   % (prefix, esc(d.name), esc(d.schema), esc(d.device), esc(d.date or '—'), len(d.rows), len(charts)))
        s = ['<section class="bench-file" id="%s" data-file="%s" data-charts="%d">' % (prefix, esc(d.name), len(charts)),
             '<h2>%s</h2>' % esc(d.name),
             '<p class="meta">schema: %s · device: %s · date: %s%s</p>'
             % (esc(d.schema), esc(d.device), esc(d.date or '—'), (' · ' + esc(d.what)) if d.what else ''),
             table(d.columns, d.rows)]
        if d.ratio_note:
            s.append('<p class="note">%s</p>' % esc(d.ratio_note))
        s.append('<div class="charts">%s</div>' % '\n'.join(c.svg() for c in charts))
        s.append('</section>')
        sections.append('\n'.join(s))
    extra = []
    for title, sid, charts, what in (
            ('CPU vs GPU', 'cpu-vs-gpu', cpu_gpu_charts(datasets),
             'ephc on a CPU device and on a GPU device, the same op and size (from any files).'),
            ('Before/after fusion', 'fusion', fusion_charts(datasets),
             'Unfused and fused times of the same op and size (rows marked fused/unfused, or files X and X_fused).')):
        n_charts += len(charts)
        toc.append('<tr><td class="t"><a href="#%s">%s</a></td><td class="t" colspan="4">%s</td><td>%d</td></tr>'
                   % (sid, title, esc(what), len(charts)))
        extra.append('<section class="cross" id="%s" data-charts="%d"><h2>%s</h2><p class="note">%s</p>'
                     '<div class="charts">%s</div>%s</section>'
                     % (sid, len(charts), title, esc(what), '\n'.join(c.svg() for c in charts),
                        '' if charts else '<p>None in these results.</p>'))
    unk = ''.join('<li><code>%s</code>: %s</li>' % (esc(n), esc(why)) for n, why in unknown)
    page = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
            '<title>ephc benchmark report</title>',
            '<meta name="eph-chart-count" content="%d">' % n_charts,
            '<style>%s</style>' % CSS, '<script>%s</script>' % SCRIPT, '</head>',
            '<body data-expected-charts="%d">' % n_charts,
            '<h1>ephc benchmark report</h1>',
            '<p class="meta">%d result files, %d charts, from <code>bench/results</code> by '
            '<code>bench/report/make_report.py</code>. Times are in milliseconds; bars are medians as the benches '
            'wrote them. The raw numbers and the conditions of each run are in bench/RESULTS.md.</p>'
            % (len(datasets), n_charts),
            '<table class="summary"><tr><th>file</th><th>schema</th><th>device</th><th>date (file name)</th>'
            '<th>rows</th><th>charts</th></tr>%s</table>' % ''.join(toc)]
    page += sections + extra
    page.append('<section id="unknown" data-files="%d"><h2>Files not charted</h2>%s</section>'
                % (len(unknown), '<ul>%s</ul>' % unk if unk else '<p>None.</p>'))
    page.append('</body></html>\n')
    return '\n'.join(page), datasets, unknown, n_charts


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--results', default=os.path.join(here, '..', 'results'))
    ap.add_argument('--out', default='index.html')
    a = ap.parse_args(argv)
    page, datasets, unknown, n_charts = build(a.results)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, 'w', encoding='utf-8') as f:
        f.write(page)
    print('make_report: %d files charted, %d not, %d charts -> %s' % (len(datasets), len(unknown), n_charts, a.out))
    for n, why in unknown:
        print('make_report: not charted: %s (%s)' % (n, why))
    return 0


if __name__ == '__main__':
    sys.exit(main())
