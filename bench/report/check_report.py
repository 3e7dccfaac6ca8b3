#!/usr/bin/python3
"""Checks the page make_report.py wrote (ctest bench.report):

    check_report.py --results DIR --html FILE [--expect-unknown N] [--expect-fusion N]

The number of charts is worked out here from the JSON files themselves (not
by make_report.py's code): per file, one chart per op plus one of ratios
where the file has ratios; then the before/after fusion charts (an op with
fused and unfused times) and the CPU vs GPU charts. The page must be
self-contained (no external reference, no <script src>, <link>, <img>), each
chart an <svg> with a title, both axis labels and as many drawn bars
(finite, positive sizes) as it declares, and each file's table as many rows
as the file has results. Prints "report check: ok, N charts" or the errors.
"""
import argparse
import json
import math
import os
import re
import sys
from html.parser import HTMLParser


def expected_for_file(name, data):
    """(charts, table rows, fusion ops) for one results file, or None for a schema the report does not know."""
    ops, ratios, rows, fusion = [], False, None, set()
    if name.endswith('.jsonl'):
        lines = [r for r in data if isinstance(r, dict) and 'name' in r and 'size' in r and 'median_ms' in r]
        if not lines:
            return None
        ops = [r['name'] for r in lines]
    elif isinstance(data, list) and data and all(isinstance(r, dict) and 'model' in r and isinstance(r.get('ephc'), dict)
                                                 and isinstance(r.get('torch'), dict) for r in data):
        # bench/device/bert.sh: one op (the model family), ratios where both times are there.
        ops, rows = ['model'], len(data)
        ratios = any(r['torch'].get('ms', -1) > 0 and r['ephc'].get('wall_ms', -1) > 0 for r in data)
    elif isinstance(data, list):
        if not data or not all(isinstance(r, dict) and 'op' in r and 'ephc_ms' in r for r in data):
            return None
        ops = [r['op'] for r in data if r['ephc_ms'] > 0]
        peer = 'torch_ms' if any('torch_ms' in r for r in data) else 'numpy_ms'
        ratios = any(r.get(peer, -1) > 0 and r['ephc_ms'] > 0 for r in data)
        rows = len(data)
        states = {}
        for r in data:
            f = r.get('fused', r.get('fusion', r.get('variant')))
            if f in (True, 'fused'):
                states.setdefault((r['op'], r['size'], r['target']), set()).add('fused')
            elif f in (False, 'unfused'):
                states.setdefault((r['op'], r['size'], r['target']), set()).add('unfused')
        fusion = {k[0] for k, v in states.items() if v == {'fused', 'unfused'}}
    elif isinstance(data, dict) and isinstance(data.get('rows'), list):
        rs = data['rows']
        rows = len(rs)
        if rs and all('benchmark' in r for r in rs):
            ops = [r['benchmark'].split(' ')[0] for r in rs]
            ratios = any('eph_vs_plain' in r or 'eph_vs_openblas' in r for r in rs)
        elif rs and all('mib' in r for r in rs):
            ops, ratios = ['overlap'], any(r.get('hidden', 0) > 0 for r in rs)
        elif rs and all('config' in r for r in rs):
            ops, ratios = ['startup'], any(r.get('wall_vs_interp', 0) > 0 for r in rs)
        else:
            return None
    elif isinstance(data, dict) and isinstance(data.get('results'), list):
        rs = data['results']
        rows = len(rs)
        bench = data.get('bench')
        if bench == 'eph_value_bench':
            ops = ['value']
        elif bench == 'torch_value':
            ops, ratios = ['value'], True
        elif bench == 'eph_value_ceres_bench':
            ops, ratios = [r['family'] for r in rs], True
        elif rs and all('name' in r and 'size' in r and ('eph' in r or 'median_ms' in r) for r in rs):
            ops = [r['name'] for r in rs]
            ratios = any(r.get('ratio', 0) > 0 or r.get('ratio_cuda', 0) > 0 for r in rs)
        else:
            return None
    else:
        return None
    return len(set(ops)) + (1 if ratios else 0), rows, fusion


def fusion_pairs(results):
    """Files X and X_fused of eph_value_bench: one before/after chart each."""
    names = set(results)
    n = 0
    for name, data in results.items():
        if name.endswith('_fused.json') and name.replace('_fused.json', '.json') in names:
            if isinstance(data, dict) and data.get('bench') == 'eph_value_bench':
                n += 1
    return n


VOID = ('meta', 'link', 'br', 'img', 'input', 'hr', 'line')  # no end tag (our <line/>s close themselves)


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.charts, self.sections, self.errors = [], [], {}, []
        self.meta_count, self.body, self.unknown = None, {}, []
        self.section, self.in_text, self.text = None, None, ''
        self.in_unknown = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ('img', 'link', 'iframe', 'object', 'embed') or (tag == 'script' and 'src' in a):
            self.errors.append('external or embedded resource: <%s %s>' % (tag, a))
        for k, v in a.items():
            if k in ('src', 'href') and v and not v.startswith('#'):
                self.errors.append('reference outside the page: %s="%s"' % (k, v))
        if tag == 'meta' and a.get('name') == 'eph-chart-count':
            self.meta_count = int(a['content'])
        if tag == 'body':
            self.body = a
        if tag == 'section':
            self.section = a.get('data-file') or a.get('id')
            self.sections[self.section] = {'charts': 0, 'declared': int(a.get('data-charts', -1)), 'rows': 0,
                                           'tables': 0}
            self.in_unknown = a.get('id') == 'unknown'
        if tag == 'li' and self.in_unknown:
            self.unknown.append(1)
        if tag == 'table' and self.section:
            self.sections[self.section]['tables'] += 1
        if tag == 'tr' and self.section and self.sections[self.section]['tables'] == 1:
            self.sections[self.section]['rows'] += 1
        if tag == 'svg':
            if a.get('class') != 'chart':
                self.errors.append('an svg that is not a chart')
            self.charts.append({'id': a.get('id'), 'declared': int(a.get('data-bars', -1)), 'bars': 0, 'title': '',
                                'x': '', 'y': '', 'section': self.section, 'series': set()})
            if self.section:
                self.sections[self.section]['charts'] += 1
        if self.charts and 'svg' in self.stack:
            c = self.charts[-1]
            if tag == 'title' and self.stack[-1] == 'svg':
                self.in_text = 'title'
            if tag == 'text' and 'axis-label' in a.get('class', ''):
                self.in_text = 'x' if 'x-label' in a['class'] else 'y'
            if tag == 'rect' and a.get('class') == 'bar':
                try:
                    vals = [float(a[k]) for k in ('x', 'y', 'width', 'height', 'data-value')]
                except (KeyError, ValueError):
                    vals = [float('nan')]
                if all(math.isfinite(v) for v in vals) and vals[2] > 0 and vals[3] > 0 and vals[4] > 0:
                    c['bars'] += 1
                else:
                    self.errors.append('chart %s: a bar with bad geometry %s' % (c['id'], a))
                c['series'].add(a.get('data-series', ''))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append('unbalanced </%s> (open: %s)' % (tag, self.stack[-3:]))
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        if tag in ('title', 'text'):
            self.in_text = None
        if tag == 'section':
            self.section = None
            self.in_unknown = False

    def handle_data(self, data):
        if self.in_text and self.charts:
            self.charts[-1][self.in_text] += data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--results', required=True)
    ap.add_argument('--html', required=True)
    ap.add_argument('--expect-unknown', type=int, default=None)
    ap.add_argument('--expect-fusion', type=int, default=None)
    a = ap.parse_args()
    errors = []
    results, per_file, unknown, fusion = {}, {}, 0, 0
    for name in sorted(os.listdir(a.results)):
        if not name.endswith(('.json', '.jsonl')):
            continue
        try:
            with open(os.path.join(a.results, name)) as f:
                text = f.read()
            data = [json.loads(l) for l in text.splitlines() if l.strip()] if name.endswith('.jsonl') else json.loads(text)
        except ValueError:
            unknown += 1
            continue
        results[name] = data
        e = expected_for_file(name, data)
        if e is None:
            unknown += 1
            continue
        per_file[name] = e
        fusion += len(e[2])
    fusion += fusion_pairs(results)

    with open(a.html, encoding='utf-8') as f:
        text = f.read()
    if re.search(r'https?://(?!www\.w3\.org/2000/svg)', text):
        errors.append('the page names a network address')
    p = Page()
    p.feed(text)
    p.close()
    errors += p.errors
    if p.stack:
        errors.append('unclosed tags at the end: %s' % p.stack)
    for name, (charts, rows, _) in sorted(per_file.items()):
        s = p.sections.get(name)
        if s is None:
            errors.append('%s: no section on the page' % name)
            continue
        if s['charts'] != charts or s['declared'] != charts:
            errors.append('%s: %d charts on the page (declared %d), %d expected from the JSON'
                          % (name, s['charts'], s['declared'], charts))
        if rows is not None and s['rows'] - 1 != rows:
            errors.append('%s: the table has %d rows, the file %d' % (name, s['rows'] - 1, rows))
    extra = set(s for s in p.sections if s not in per_file and s not in ('cpu-vs-gpu', 'fusion', 'unknown'))
    if extra:
        errors.append('sections for files not expected: %s' % sorted(extra))
    fus = p.sections.get('fusion', {}).get('charts', -1)
    if fus != fusion:
        errors.append('%d before/after fusion charts, %d expected from the JSON' % (fus, fusion))
    if a.expect_fusion is not None and fusion != a.expect_fusion:
        errors.append('%d fusion pairs in the JSON, the test expects %d' % (fusion, a.expect_fusion))
    cpu_gpu = [c for c in p.charts if c['section'] == 'cpu-vs-gpu']
    for c in cpu_gpu:
        kinds = {s.split(':')[0] for s in c['series']}
        if kinds != {'cpu', 'gpu'}:
            errors.append('CPU vs GPU chart %s has series of %s' % (c['id'], sorted(kinds)))
    expected = sum(e[0] for e in per_file.values()) + fusion + len(cpu_gpu)
    if len(p.charts) != expected or p.meta_count != expected or int(p.body.get('data-expected-charts', -1)) != expected:
        errors.append('%d charts on the page (meta %s, body %s), %d expected'
                      % (len(p.charts), p.meta_count, p.body.get('data-expected-charts'), expected))
    for c in p.charts:
        if not c['title'].strip():
            errors.append('chart %s has no title' % c['id'])
        if not c['x'].strip() or not c['y'].strip():
            errors.append('chart %s lacks an axis label (x "%s", y "%s")' % (c['id'], c['x'], c['y']))
        if c['bars'] == 0 or c['bars'] != c['declared']:
            errors.append('chart %s: %d bars drawn, %d declared' % (c['id'], c['bars'], c['declared']))
    if len(p.unknown) != unknown:
        errors.append('%d files listed as not charted, %d expected' % (len(p.unknown), unknown))
    if a.expect_unknown is not None and unknown != a.expect_unknown:
        errors.append('%d files of unknown schema, the test expects %d' % (unknown, a.expect_unknown))
    if len(per_file) == 0:
        errors.append('no result file understood')
    if errors:
        for e in errors[:50]:
            print('report check: ' + e)
        print('report check: FAILED (%d errors)' % len(errors))
        return 1
    print('report check: ok, %d files, %d charts (%d CPU vs GPU, %d fusion), %d not charted'
          % (len(per_file), expected, len(cpu_gpu), fusion, unknown))
    return 0


if __name__ == '__main__':
    sys.exit(main())
