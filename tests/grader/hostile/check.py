#!/usr/bin/env python3
"""tests/grader/hostile/check.py — what run.sh's batch wrote, judged.

    check.py LIST BATCH_OUT ALONE_OUT COURSE

LIST holds one NUL-terminated record per submission of the batch, in the
order they were given to the grader: name, path, expect file and role
(victim, hostile, control_solution, control_skeleton), separated by the
byte 0x1f (names may hold tabs and newlines). The secret
(HOSTILE_SECRET), the environment canary (HOSTILE_ENV_CANARY), the previous
batch's marker (HOSTILE_PREV_MARKER) and the per-submission time bound
(HOSTILE_MAX_SUBMISSION_S) come from the environment.

Prints one line per submission and per batch-wide check, `ok   name   ...`
or `FAIL name   why`, and exits 1 if any failed.
"""
import base64
import codecs
import csv
import io
import json
import os
import re
import sys
import xml.dom.minidom

FORGED = 'HOSTILE-FORGED'
failures = 0


def say(ok, name, text):
    global failures
    if not ok:
        failures += 1
    print('%-4s %-28s %s' % ('ok' if ok else 'FAIL', name, text), flush=True)


def read_bytes(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except OSError:
        return None


def parse_expect(path):
    e = {'reasons': [], 'absent': [], 'valid_outputs': False, 'score': 0.0, 'order': 50}
    for raw in open(path, encoding='utf-8'):
        line = raw.split('#', 1)[0].strip() if not raw.startswith('reason') else raw.strip()
        if not line:
            continue
        key, _, val = line.partition(' ')
        val = val.strip()
        if key == 'reason':
            # "a|b|c": any one of them names why; several reason lines: each must
            e['reasons'].append([v.strip() for v in val.split('|') if v.strip()])
        elif key == 'absent':
            e['absent'].append(val)
        elif key == 'valid-outputs':
            e['valid_outputs'] = val == 'yes'
        elif key == 'score':
            e['score'] = float(val)
    return e


def strings_of(obj):
    """Every string in a JSON value, keys too."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from strings_of(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings_of(v)


def predicted_ids(path):
    """What the grader's id rule makes of a name (old and new rules)."""
    b = path.rstrip('/').rsplit('/', 1)[-1]
    for ext in ('.tar.gz', '.tgz', '.tar', '.zip'):
        if b.endswith(ext) and len(b) > len(ext):
            b = b[:-len(ext)]
            break
    s = ''.join(c if (c.isascii() and c.isalnum()) or c in '-_.' else '_' for c in b)
    out = []
    if s and s[0] in '.-':
        out.append('_' + s[1:])
        out.append('_' + s)
    out.append(s or 'submission')
    return out


class Batch:
    def __init__(self, out):
        self.out = out
        self.by_dir = {}  # folder -> (results path)
        for base in (os.path.join(out, 'submissions'), out):
            if not os.path.isdir(base):
                continue
            for d in sorted(os.listdir(base)):
                p = os.path.join(base, d, 'results.json')
                if d != '.work' and os.path.isfile(p):
                    self.by_dir.setdefault(d, p)
        self.by_path = {}
        for d, p in self.by_dir.items():
            try:
                r = json.load(open(p, encoding='utf-8'))
                sp = r.get('extra_data', {}).get('submission_path')
                if isinstance(sp, str):
                    self.by_path[sp] = p
            except Exception:
                pass
        self.roster_rows = None
        for name in ('roster.csv', 'roster.csv.partial'):
            p = os.path.join(out, name)
            if os.path.isfile(p):
                try:
                    self.roster_rows = list(csv.reader(io.StringIO(open(p, encoding='utf-8',
                                                                     newline='').read())))
                except Exception:
                    self.roster_rows = None
                break

    def find(self, index, path):
        if path in self.by_path:
            return self.by_path[path]
        if self.roster_rows and len(self.roster_rows) > index + 1:
            rid = self.roster_rows[index + 1][0]
            if rid in self.by_dir:
                return self.by_dir[rid]
        lower = {d.lower(): p for d, p in self.by_dir.items()}
        for cand in predicted_ids(path):
            if cand.lower() in lower:
                return lower[cand.lower()]
        return None


def lesson01(r):
    try:
        return r['extra_data']['lessons']['01']
    except (KeyError, TypeError):
        return None


def check_map(r):
    """number -> (score, status) of every test entry of lesson 01."""
    m = {}
    for t in r.get('tests', []):
        n = t.get('number', '')
        if isinstance(n, str) and n.startswith('01.'):
            m[n] = (t.get('score'), t.get('status'))
    return m


def markdown_problems(text):
    """Controls, XML-illegal code points, raw HTML outside code, odd fences."""
    probs = []
    bad = sorted({'%02x' % ord(c) for c in text
                  if (ord(c) < 0x20 and c not in '\n\t') or ord(c) == 0x7f})
    if bad:
        probs.append('control bytes ' + ','.join(bad))
    if any(c in text for c in '\ufffe\uffff') or re.search('[\ud800-\udfff]', text):
        probs.append('U+FFFE/U+FFFF/surrogates')
    if '\u202e' in text:
        probs.append('a right-to-left override (U+202E)')
    fence = False
    fences = 0
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fence = not fence
            fences += 1
            continue
        if not fence and re.search(r'<(script|img|iframe)\b', line, re.I):
            probs.append('raw HTML outside a code block: ' + line[:60])
    if fences % 2:
        probs.append('an unclosed ``` fence (a fence was broken out of)')
    return probs


def secret_forms(secret):
    rev = secret[::-1]
    forms = {}
    for label, s in (('verbatim', secret), ('reversed', rev)):
        b = s.encode()
        forms[label] = s
        forms[label + ' hex'] = b.hex()
        forms[label + ' HEX'] = b.hex().upper()
        forms[label + ' base64'] = base64.b64encode(b).decode().rstrip('=')
        forms[label + ' base64url'] = base64.urlsafe_b64encode(b).decode().rstrip('=')
    forms['rot13'] = codecs.encode(secret, 'rot13')
    return {k: v for k, v in forms.items() if len(v) >= 8}


def solution_only_lines(course):
    sol = read_bytes(os.path.join(course, 'solutions/01-vector-add/vector_add.cu'))
    skel = read_bytes(os.path.join(course, 'lessons/01-vector-add/vector_add.cu'))
    if sol is None or skel is None:
        return []
    skel_lines = {l.strip() for l in skel.decode('utf-8', 'replace').split('\n')}
    out = []
    for l in sol.decode('utf-8', 'replace').split('\n'):
        s = l.strip()
        if len(s) >= 24 and s not in skel_lines and not s.startswith('#include'):
            out.append(s)
    return out


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    list_path, batch_out, alone_out, course = sys.argv[1:]
    secret = os.environ.get('HOSTILE_SECRET', '')
    env_canary = os.environ.get('HOSTILE_ENV_CANARY', '')
    prev_marker = os.environ.get('HOSTILE_PREV_MARKER', '')
    max_s = float(os.environ.get('HOSTILE_MAX_SUBMISSION_S', '0') or 0)
    records = []
    for rec in open(list_path, 'rb').read().split(b'\0'):
        if rec:
            name, path, expect, role = rec.decode('utf-8', 'surrogateescape').split('\x1f')
            records.append((name, path, expect, role))
    batch = Batch(batch_out)
    alone = Batch(alone_out)
    leaks = solution_only_lines(course)
    forms = secret_forms(secret) if secret else {}

    # ---- the honest solution, graded alone ---------------------------------------
    alone_r = None
    for i, (name, path, expect, role) in enumerate(records):
        if role == 'control_solution':
            p = alone.find(0, path)
            try:
                alone_r = json.load(open(p, encoding='utf-8')) if p else None
            except Exception:
                alone_r = None
    if alone_r is None:
        say(False, 'alone', 'the worked solution graded alone has no readable results.json in '
            + alone_out)

    # ---- every submission -------------------------------------------------------------
    for i, (name, path, expect, role) in enumerate(records):
        p = batch.find(i, path)
        if p is None:
            say(False, name, 'no results.json found for it (looked by recorded path, roster '
                'order and id)')
            continue
        raw = read_bytes(p)
        try:
            r = json.loads(raw.decode('utf-8'))
        except Exception as ex:
            say(False, name, 'results.json is not valid JSON: %s' % ex)
            continue
        sub_dir = os.path.dirname(p)
        md = read_bytes(os.path.join(sub_dir, 'report.md'))
        md_text = md.decode('utf-8', 'surrogateescape') if md is not None else ''
        text = '\n'.join(strings_of(r)) + '\n' + md_text
        # the reasons are looked for in what the grader says, not in the
        # submission's own name (include_dev_zero must not match "include"):
        # its name, id and path are blanked out first, Markdown-escaped too
        said = text
        extra = r.get('extra_data', {}) if isinstance(r.get('extra_data'), dict) else {}
        names = {name, path, path.rstrip('/').rsplit('/', 1)[-1], str(extra.get('submission', '')),
                 str(extra.get('submission_path', ''))}
        for s in sorted((n for n in names if n), key=len, reverse=True):
            pat = ''.join('\\\\?' + re.escape(c) for c in s)
            said = re.sub(pat, ' ', said, flags=re.I)
        low = said.lower()
        l01 = lesson01(r)
        score = r.get('score')
        state = l01.get('state') if l01 else None
        why = []

        if role == 'control_solution':
            if alone_r is not None:
                a, b = check_map(alone_r), check_map(r)
                al = lesson01(alone_r) or {}
                if (alone_r.get('score'), al.get('state'), a) != (score, state, b):
                    diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                    why.append('graded with the others: %s (%s), alone: %s (%s); checks that '
                               'differ: %s' % (score, state, alone_r.get('score'),
                                               al.get('state'), ', '.join(diff) or 'none'))
            base = path.rstrip('/').rsplit('/', 1)[-1]
            sp = r.get('extra_data', {}).get('submission_path')
            rid = r.get('extra_data', {}).get('submission')
            if rid != base and sp != path:
                why.append('its id is %r, not its own name %r, and no recorded path tells it '
                           'apart (a case-twin took its name?)' % (rid, base))
            say(not why, name, '; '.join(why) or 'scored %s, as when graded alone' % score)
            continue
        if role in ('control_skeleton', 'victim'):
            if score != 0:
                why.append('scored %s, not 0' % score)
            want_state = (lesson01(alone_r) or {}).get('state') if alone_r else 'graded'
            if state != want_state:
                why.append('lesson 01 is %r, not %r as the honest solution alone' % (state,
                                                                                   want_state))
            if FORGED in text:
                why.append('its results were rewritten by another submission (%s)' % FORGED)
            say(not why, name, '; '.join(why) or 'scored 0, %s, untouched' % state)
            continue

        # ---- a hostile submission -------------------------------------------------------
        e = parse_expect(expect)
        l01_score = l01.get('score') if l01 else None
        if l01_score is None or float(l01_score) != e['score'] or float(score or 0) != e['score']:
            why.append('scored %s (lesson 01: %s), not %g' % (score, l01_score, e['score']))
        found = []
        for alts in e['reasons']:
            hit = [a for a in alts if a.lower() in low]
            if hit:
                found.append('/'.join(hit))
            else:
                why.append('no message names why: none of %s in results.json or report.md '
                           '(lesson 01: %s)' % (' | '.join(repr(a) for a in alts), state))
        for s in e['absent']:
            if s in text:
                why.append('its report shows %r' % s)
        shown = [l for l in leaks if l in text]
        if shown:
            why.append('its report quotes %d lines of the worked solution, e.g. %r'
                       % (len(shown), shown[0][:60]))
        if prev_marker and prev_marker in text:
            why.append('its report quotes a previous batch\'s results')
        if FORGED in text:
            why.append('forged content (%s) reached its grade' % FORGED)
        if max_s > 0:
            t = r.get('execution_time')
            if isinstance(t, (int, float)) and t > max_s:
                why.append('grading it took %.0f s, more than its limits allow (%.0f s)'
                           % (t, max_s))
        if e['valid_outputs']:
            probs = markdown_problems(md_text) if md is not None else ['no report.md']
            ctl = sorted({'%02x' % ord(c) for s in strings_of(r) for c in s
                          if (ord(c) < 0x20 and c not in '\n\t\r') or ord(c) == 0x7f})
            if ctl:
                probs.append('results.json strings hold control bytes ' + ','.join(ctl))
            if probs:
                why.append('report.md/results.json not inert: ' + '; '.join(probs))
        ok_text = 'scored %g' % e['score']
        if found:
            ok_text += ': ' + ', '.join(repr(f) for f in found)
        elif e['valid_outputs']:
            ok_text += ', outputs valid (%s)' % (state or '?')
        say(not why, name, '; '.join(why) or ok_text)

    # ---- the batch's files ---------------------------------------------------------------
    junit = os.path.join(batch_out, 'junit.xml')
    if not os.path.isfile(junit):
        say(False, 'batch/junit.xml', 'missing (%s)' % ('only junit.xml.partial: the batch did '
            'not finish' if os.path.exists(junit + '.partial') else
            'a directory' if os.path.isdir(junit) else 'not written'))
    else:
        try:
            dom = xml.dom.minidom.parse(junit)
            n = len(dom.getElementsByTagName('testsuite'))
            say(n == len(records), 'batch/junit.xml',
                'parses, %d testsuites for %d submissions' % (n, len(records)))
        except Exception as ex:
            say(False, 'batch/junit.xml', 'does not parse: %s' % ex)
    roster = os.path.join(batch_out, 'roster.csv')
    if not os.path.isfile(roster):
        say(False, 'batch/roster.csv', 'missing (%s)' % ('a directory' if os.path.isdir(roster)
                                                          else 'not written'))
    else:
        try:
            rows = list(csv.reader(io.StringIO(open(roster, encoding='utf-8',
                                                    newline='').read(), newline='')))
            probs = []
            if len(rows) != len(records) + 1:
                probs.append('%d rows for %d submissions' % (len(rows) - 1, len(records)))
            if rows and any(len(x) != len(rows[0]) for x in rows):
                probs.append('rows of different lengths')
            inj = [c for x in rows[1:] for c in x
                   if c[:1] in ('=', '+', '@', '\t', '\r') or re.match(r'-[^0-9]', c)]
            if inj:
                probs.append('a cell a spreadsheet runs as a formula: %r' % inj[0][:40])
            say(not probs, 'batch/roster.csv', '; '.join(probs) or 'parses, one row per '
                'submission, no formulas')
        except Exception as ex:
            say(False, 'batch/roster.csv', 'does not parse: %s' % ex)

    bad_json, seen, forged_in = [], [], []
    for root, dirs, files in os.walk(batch_out):
        dirs[:] = [d for d in dirs if d != '.work']
        for f in files:
            p = os.path.join(root, f)
            data = read_bytes(p) or b''
            if f == 'results.json':
                try:
                    json.loads(data.decode('utf-8'))
                except Exception:
                    bad_json.append(os.path.relpath(p, batch_out))
            t = data.decode('utf-8', 'surrogateescape')
            for label, form in forms.items():
                if form in t:
                    seen.append('%s in %s' % (label, os.path.relpath(p, batch_out)))
            if env_canary and env_canary in t:
                seen.append('the grader\'s environment (a canary variable) in %s'
                            % os.path.relpath(p, batch_out))
    say(not bad_json, 'batch/results.json', 'every results.json parses' if not bad_json else
        'not JSON: ' + ', '.join(bad_json[:5]))
    say(not seen, 'batch/secret', 'the batch secret appears nowhere, in no encoding'
        if not seen else 'leaked: ' + '; '.join(seen[:6]) + (' (and %d more)' % (len(seen) - 6)
                                                             if len(seen) > 6 else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
