#!/usr/bin/python3
"""Opens the report in headless Chromium (ctest bench.report_chromium):

    check_chromium.py FILE.html

The page's inline script checks, once loaded, that every <svg class="chart">
has a nonzero bounding box and as many drawn bars as it declares, counts
console.error calls and uncaught errors, and writes the result to <body
data-charts-total data-charts-rendered data-console-errors>, which
`chromium --headless --dump-dom` prints. Chromium's own log
(--enable-logging=stderr --v=0) shows every console message of the page as
"CONSOLE"; the page writes none, so any such line fails the test.

Without Chromium (Debian `chromium`) it prints "chromium not found: skipped"
and exits 0 (ctest: skipped), unless EPH_REQUIRE_CHROMIUM=1: then it fails.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def find_chromium():
    for name in (os.environ.get('EPH_CHROMIUM', ''), 'chromium', 'chromium-browser', 'google-chrome'):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def main():
    if len(sys.argv) != 2:
        print('usage: check_chromium.py FILE.html')
        return 2
    page = os.path.abspath(sys.argv[1])
    chromium = find_chromium()
    if chromium is None:
        if os.environ.get('EPH_REQUIRE_CHROMIUM') == '1':
            print('chromium check: FAILED: chromium not found and EPH_REQUIRE_CHROMIUM=1 (apt-get install chromium)')
            return 1
        print('chromium not found: skipped (apt-get install chromium; EPH_REQUIRE_CHROMIUM=1 makes this a failure)')
        return 0
    with open(page, encoding='utf-8') as f:
        m = re.search(r'<meta name="eph-chart-count" content="(\d+)"', f.read())
    if not m:
        print('chromium check: FAILED: %s is not a report of make_report.py (no eph-chart-count)' % page)
        return 1
    expected = int(m.group(1))
    with tempfile.TemporaryDirectory(prefix='eph-chromium-') as profile:
        cmd = [chromium, '--headless', '--disable-gpu', '--no-sandbox', '--no-first-run', '--disable-extensions',
               '--disable-dev-shm-usage', '--user-data-dir=' + profile, '--enable-logging=stderr', '--v=0',
               '--dump-dom', 'file://' + page]
        env = dict(os.environ, HOME=profile)
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
        except subprocess.TimeoutExpired:
            print('chromium check: FAILED: chromium did not finish in 120 s')
            return 1
    dom = p.stdout.decode('utf-8', 'replace')
    log = p.stderr.decode('utf-8', 'replace')
    errors = []
    console = [l for l in log.splitlines() if ':CONSOLE' in l]
    for l in console:
        errors.append('console: ' + l.strip())
    body = re.search(r'<body([^>]*)>', dom)
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(1))) if body else {}
    if p.returncode != 0:
        errors.append('chromium exited with %d' % p.returncode)
    if 'data-charts-total' not in attrs:
        errors.append('the page\'s check did not run (no data-charts-total in the DOM; %d bytes of DOM)' % len(dom))
    else:
        total, rendered = int(attrs['data-charts-total']), int(attrs['data-charts-rendered'])
        if total != expected:
            errors.append('%d charts in the DOM, the page declares %d' % (total, expected))
        if rendered != total:
            errors.append('%d of %d charts rendered; not: %s' % (rendered, total, attrs.get('data-charts-bad')))
        if attrs.get('data-console-errors') != '0':
            errors.append('%s console errors counted by the page' % attrs.get('data-console-errors'))
    version = subprocess.run([chromium, '--version'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    version = version.decode('utf-8', 'replace').strip()
    if errors:
        for e in errors[:40]:
            print('chromium check: ' + e)
        print('chromium check: FAILED (%s)' % version)
        return 1
    print('chromium check: ok, %s of %s charts rendered, no console message (%s)'
          % (attrs['data-charts-rendered'], attrs['data-charts-total'], version))
    return 0


if __name__ == '__main__':
    sys.exit(main())
