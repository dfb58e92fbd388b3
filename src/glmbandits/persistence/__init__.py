"""Safe, exact, versioned save and load of every policy.

``save(policy, path)`` writes one file (a zip of a JSON manifest, a JSON state
tree and an ``.npz`` of arrays, signed by a trailing SHA-256), atomically.
``load(path)`` rebuilds the policy bit for bit, without pickle: it can only
create glmbandits' own allowed classes (and those passed to
:func:`register_class`), it bounds every size before allocating it
(``max_bytes``), and it refuses a damaged, truncated, crafted, oversized or
newer file, or a state its class's constructor would refuse, with
:class:`~glmbandits.exceptions.ModelFileError`. See ``docs/persistence.md``.

Modules: :mod:`.codec` (object graph ↔ tree and arrays), :mod:`.allowed` (the
class allow-list), :mod:`.archive` (the file format, atomic writes),
:mod:`.limits` (the size limits of reading), :mod:`.checks` (the checks of a
decoded policy), :mod:`.model_file` (``save``/``load``).

Examples
--------
>>> import os, tempfile
>>> from glmbandits import LinUCB
>>> path = save(LinUCB(n_features=3, seed=0), os.path.join(tempfile.mkdtemp(), "m.glmb"))
>>> type(load(path)).__name__
'LinUCB'
"""

from ..exceptions import ModelFileError
from .allowed import register_class
from .archive import FORMAT_VERSION
from .model_file import load, save

__all__ = ["save", "load", "FORMAT_VERSION", "register_class", "ModelFileError"]
