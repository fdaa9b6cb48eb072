"Saved exact-search matrices are a cache: a full or read-only disk leaves no file (and no error), only a rebuild next time."
import numpy as np, pytest
from qmd_nb.engine.chroma import save_matrix, load_matrix
from conftest import mount

def test_full_disk_saves_nothing_and_keeps_the_old_copy(tmp_path, mounts):
    mnt = tmp_path/'mnt'; mnt.mkdir()
    if not mount('-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt): pytest.skip('needs root to mount a small tmpfs')
    mounts.append(mnt)
    f, small = mnt/'exact-x.npz', np.ones((100, 8), np.float32)
    save_matrix(f, 1, small, hashes=np.array(['a']))
    save_matrix(f, 2, np.ones((4000, 384), np.float32), hashes=np.array(['a'])) # 6 MB: does not fit
    assert sorted(p.suffix for p in mnt.iterdir()) == ['.npy', '.npz'] # no partial file left behind
    assert load_matrix(f, 2) is None # the bigger one is not there: the caller builds it again
    M, arrays = load_matrix(f, 1); assert M.shape == (100, 8) and list(arrays['hashes']) == ['a']

def test_read_only_disk_saves_nothing_and_still_reads(tmp_path, mounts):
    d, mnt = tmp_path/'d', tmp_path/'ro'; d.mkdir(); mnt.mkdir()
    save_matrix(d/'exact-x.npz', 3, np.eye(4, dtype=np.float32))
    if not mount('--bind', d, mnt): pytest.skip('needs root to bind-mount')
    mounts.append(mnt)
    if not mount('-o', 'remount,bind,ro', mnt): pytest.skip('cannot remount read-only')
    save_matrix(mnt/'exact-x.npz', 4, np.zeros((4, 4), np.float32)) # root ignores permissions, not a read-only mount
    assert load_matrix(mnt/'exact-x.npz', 4) is None
    assert (load_matrix(mnt/'exact-x.npz', 3)[0] == np.eye(4)).all() # the saved copy still serves its generation
