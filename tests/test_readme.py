"""The README as a new user meets it: its command-line section run line by line, as written, from the repository's root
in a fresh home (after the setup the README describes: `source .venv/bin/activate` is the block's first line), and its
tour's first cell run from the root, printing what the README says it prints.

Three kinds of line cannot simply run to completion, and are driven the way a user would: `qmd-nb mcp ...` (a stdio
server) gets an `initialize` request on stdin, then end of input; `qmd-nb serve ...` runs in the background (on a
free port instead of 18765, which another server on this machine may hold; `QMD_NB_SERVER` tells the later
`--mode server` line where) until the last line; `jupyter lab nbs/index.ipynb` runs until its server hands out the
notebook. The converted embedding model is shared with the other tests (`QMD_NB_MODEL_CACHE`): converting it again
would test nothing new."""
import json, os, re, socket, subprocess, time, urllib.request
from pathlib import Path
from conftest import ROOT

INIT = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
                   'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'readme', 'version': '0'}}}) + '\n'

def sh_block(markdown:str, heading:str) -> list[str]:
    "The lines of the first ```sh block after `heading`."
    block = markdown.split(heading, 1)[1].split('```sh\n', 1)[1].split('\n```', 1)[0]
    return [l for l in block.splitlines() if l.strip()]

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def fresh_env(home:Path) -> dict:
    "A new user's environment: an empty home, no qmd-nb settings, and a PATH without .venv/bin."
    keep = {k: v for k, v in os.environ.items() if k in ('LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'QMD_NB_MODEL_CACHE', 'HF_HUB_OFFLINE')}
    home.mkdir()
    if os.getuid() == 0: # tests run as root here; Jupyter refuses root unless told (a user's own account needs nothing)
        (home/'.jupyter').mkdir(); (home/'.jupyter'/'jupyter_server_config.json').write_text('{"ServerApp": {"allow_root": true}}', encoding='utf-8')
    return {**keep, 'HOME': str(home), 'PATH': '/usr/local/bin:/usr/bin:/bin', 'BROWSER': 'true'} # BROWSER: jupyter opens no window

def wait_for(test, seconds:float, what:str):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if (v := test()): return v
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")

def _get(url:str) -> bytes|None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r: return r.read()
    except OSError: return None

def stop(p) -> int:
    "SIGTERM, then SIGKILL if it has not gone a minute later; the exit status."
    p.terminate()
    try: return p.wait(timeout=60)
    except subprocess.TimeoutExpired: p.kill(); p.wait(); return -9

def test_command_line_section_runs_as_written(tmp_path):
    lines = sh_block((ROOT/'README.md').read_text(encoding='utf-8'), '## The command line')
    assert lines[0].startswith('source .venv/bin/activate') and len(lines) > 20
    env, prelude, background, outputs = fresh_env(tmp_path/'home'), [], [], {}
    run = lambda line, **kw: subprocess.run(['bash', '-c', '\n'.join(prelude + [line])], cwd=ROOT, env=env, capture_output=True, text=True, encoding='utf-8', **kw)
    assert run('command -v qmd-nb').returncode != 0 # not on PATH before the setup's PATH line
    try:
        for line in lines:
            if line.startswith(('source ', 'export ')):
                prelude.append(line)
                assert run('command -v qmd-nb').stdout.strip() == str(ROOT/'.venv'/'bin'/'qmd-nb'), line
                continue
            if line.startswith('qmd-nb watch'): # runs until Ctrl-C: still watching after a few seconds, then stopped
                p = subprocess.Popen(['bash', '-c', '\n'.join(prelude + ['exec ' + line])], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
                time.sleep(5)
                assert p.poll() is None, f"{line}\nexit {p.returncode}"
                stop(p)
                continue
            if line.startswith('qmd-nb serve'):
                port = free_port(); env['QMD_NB_SERVER'] = f'http://127.0.0.1:{port}'
                p = subprocess.Popen(['bash', '-c', '\n'.join(prelude + ['exec ' + (line.replace('--port 18765', f'--port {port}') if '--port' in line else line.split('  #')[0].strip() + f' --port {port}')])],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
                background.append(p)
                wait_for(lambda: _get(f'http://127.0.0.1:{port}/health'), 120, line)
                continue
            if line.startswith('jupyter lab'):
                p = subprocess.Popen(['bash', '-c', '\n'.join(prelude + ['exec ' + line])], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding='utf-8')
                background.append(p)
                url = wait_for(lambda: re.search(r'(http://(?:localhost|127\.0\.0\.1):\d+)/lab\?token=(\w+)', p.stdout.readline()), 120, line)
                # given a notebook, Jupyter serves its folder (nbs/) and opens it: the tour runs from there
                nb = json.loads(wait_for(lambda: _get(f'{url.group(1)}/api/contents/index.ipynb?token={url.group(2)}'), 60, 'the notebook'))
                assert nb['type'] == 'notebook' and nb['content']['cells'][0]['source'].startswith('# qmd-nb'), line
                continue
            r = run(line, input=INIT if line.startswith('qmd-nb mcp ') or line.split('#')[0].strip() == 'qmd-nb mcp' else None, timeout=600)
            assert r.returncode == 0, f"{line}\nexit {r.returncode}\n{r.stderr}"
            assert r.stdout.strip(), f"{line}\nprinted nothing\n{r.stderr}"
            outputs[line.split('  #')[0].strip()] = r.stdout
    finally:
        codes = [stop(p) for p in background]
    assert codes[0] == 0 # serve stops cleanly on SIGTERM
    out = lambda start: next(v for k, v in outputs.items() if k.startswith(start))
    assert 'notes: 7 indexed' in out('qmd-nb collection add examples/notes') # the default mask takes the notes...
    assert '[5 documents]' in out('qmd-nb source add -s examples/files') # ...and md, txt, pdf, docx and html alike
    assert json.loads(out('qmd-nb status --format json'))['total_documents'] == 7
    assert json.loads(out('qmd-nb get notes/guides/backups.md --json'))['text'].startswith('---\ntitle: Backup strategy') # as stored
    assert '"result"' in out('qmd-nb mcp') and 'notes/' in out('qmd-nb query "how do we keep copies safe" --mode server')

def test_tour_runs_from_the_root():
    "The tour's first cell, run from the repository's root (not from nbs/), prints what the README shows."
    readme = (ROOT/'README.md').read_text(encoding='utf-8').split('## A five-minute tour', 1)[1]
    code = readme.split('```python\n', 1)[1].split('\n```', 1)[0]
    shown = readme.split('```python\n', 1)[1].split('\n```\n\n```\n', 1)[1].split('\n```', 1)[0]
    r = subprocess.run([str(ROOT/'.venv'/'bin'/'python'), '-c', code], cwd=ROOT, capture_output=True, text=True, encoding='utf-8', timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == shown.strip() and len(list((ROOT/'nbs').rglob('[0-9]*.ipynb'))) == int(shown.split()[0])

def test_tour_outputs_are_of_these_notebooks():
    "The tour's saved outputs (index.ipynb's, copied into the README) name notebooks that exist, and count them as they are now."
    readme = (ROOT/'README.md').read_text(encoding='utf-8')
    tour = readme.split('## A five-minute tour', 1)[1].split('\n## ', 1)[0]
    stems = {p.stem for p in (ROOT/'nbs').rglob('[0-9]*.ipynb')}
    named = set(re.findall(r'\bdocs/([0-9][\w.-]*?)\.md\b', tour))
    assert named and named <= stems, f"the tour shows pages of notebooks that are gone: {sorted(named - stems)} (run nbs/index.ipynb again)"
    pages, indexed = re.search(r'^(\d+) pages:', tour, re.M), re.search(r'^(\d+) documents indexed', tour, re.M)
    assert int(pages[1]) == int(indexed[1]) == len(stems), (pages[1], indexed[1], len(stems))
