"tools/check_shape.py finds what it is meant to: long functions, private names imported across modules, SQL in a string."
import ast, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'tools'))
import check_shape as cs

SAMPLE = '''
from .store import Store, _row
from qmd_nb.engine.catalog import __version__, _hidden
def short(): return 1
def long():
''' + '    x = 1\n' * 45 + '''
class C:
    def method(self): return f"SELECT id FROM documents WHERE id={1}"
Q = "INSERT OR REPLACE INTO kv VALUES(?, ?)"
'''

def test_finds_each_kind():
    tree = ast.parse(SAMPLE)
    assert dict(cs.functions(tree))['long'] == 46 and dict(cs.functions(tree))['C.method'] == 1
    assert cs.private_imports(tree) == ['store._row', 'qmd_nb.engine.catalog._hidden'] # `__version__` is no private name
    assert len(cs.sql_lines(None, tree)) == 2

def test_the_package_keeps_its_shape():
    found = cs.findings()
    assert not [k for k in found if k not in cs.KNOWN], "run python tools/check_shape.py"
    assert not [k for k in found if k[0] == 'private import'] # none left, none allowed back
