"Shared fixtures: a real qmd-nb process per call, on a private QMD_NB_HOME, over corpora made in temp folders."
import json, os, subprocess, sys, tempfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
# every test gets its own index, but the model converted for OpenVINO (~10 s) is made once and shared
os.environ.setdefault('QMD_NB_MODEL_CACHE', str(Path(tempfile.gettempdir())/'qmd-nb-test-models')) # as the notebooks do
os.environ.setdefault('HF_HUB_OFFLINE', '1')
QMD_BIN = str(Path(sys.executable).parent/'qmd-nb')

class Qmd:
    "Runs `qmd-nb` as a subprocess with its own home."
    def __init__(self, home:Path): self.home = home; self.env = {**os.environ, 'QMD_NB_HOME': str(home), 'HF_HUB_OFFLINE': '1'}
    def __call__(self, *args, ok=True, input=None):
        r = subprocess.run([QMD_BIN, *map(str, args)], env=self.env, capture_output=True, text=True, input=input, timeout=600, encoding='utf-8')
        if ok and r.returncode != 0: raise AssertionError(f"qmd-nb {' '.join(map(str, args))} exited {r.returncode}: {r.stderr}")
        return r
    def json(self, *args): return json.loads(self(*args).stdout)

@pytest.fixture
def qmd(tmp_path): return Qmd(tmp_path/'home')

def write_tree(root:Path, files:dict) -> Path:
    "Create files (relative path -> text or bytes) under root."
    for rel, body in files.items():
        p = root/rel; p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body) if isinstance(body, bytes) else p.write_text(body, encoding='utf-8')
    return root

NOTES = {
    'backup.md': "---\ntitle: Backup strategy\ntags: [ops, storage]\nauthor: ana\n---\n# Backups\n\nUse rsync to copy files to the NAS every night.\nKeep three copies of important data.\n",
    'cooking/pasta.md': "# Pasta\n\nBoil water, add salt, cook the pasta for nine minutes.\n",
    'cooking/café.md': "# Café crème\n\nUn café crème, s'il vous plaît.\n",
    'journals/2025-05-01.md': "# May 1\n\nMeeting about the rsync daemon migration.\n" + "\n".join(f"line {i}" for i in range(5, 60)),
    'journals/2025-05-02.md': "# May 2\n\nNotes on backups.\n",
    'journals/2025-06-01.md': "# June 1\n\nHoliday.\n",
    'tokyo.md': "# 東京\n\n東京都に住んでいます。\n",
    'big.md': "# Big\n\n" + ("lorem ipsum dolor sit amet " * 800),
    '.hidden/secret.md': "# Secret\n\nrsync password\n",
    'node_modules/pkg/readme.md': "# Pkg\n\nrsync\n",
    'bad.md': b"\xff\xfe\x00 not text",
}

@pytest.fixture
def notes(tmp_path): return write_tree(tmp_path/'notes', NOTES)
