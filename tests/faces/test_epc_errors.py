"""EPC errors carry the code, message and data every face sends (issue 28 section 2):
a Lisp program using hive-rpc-epc.el, over epc.el, reads the hub's refusal back as the
plist (:code :message :data) with ``hive-rpc-epc-error``, from ``epc:call-sync``'s
error and from a deferred's errorback alike, and the same refusal on the editor socket
has the same code, message and data."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import pytest
import trio
from test_epc_face import REPO, _elpa_dirs, _lisp_str

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

NO_SUCH_ID = "0123456789abcdef"

AGENT = r"""
(require 'hive-rpc-epc)
(let* ((sync (condition-case err
                 (epc:call-sync (hive-rpc-epc-start) 'poll (list :id hv-id))
               (error (hive-rpc-epc-error err))))
       (later nil))
  (deferred:$
    (hive-rpc-epc-poll hv-id)
    (deferred:error it (lambda (err) (setq later (hive-rpc-epc-error err)))))
  (with-timeout (20 (error "no errorback"))
    (while (null later) (accept-process-output nil 0.05)))
  (with-temp-file hv-out-file
    (let ((print-escape-newlines t))
      (prin1 (list sync later (hive-rpc-epc-error "not an error")) (current-buffer))))
  (hive-rpc-epc-stop))
"""


async def test_hive_rpc_epc_el_reads_the_hubs_error(
    hub: HubService, hub_config: HubConfig, client: HubClient, short_tmp: Path
) -> None:
    emacs = shutil.which("emacs")
    assert emacs is not None, "emacs is needed (Debian: emacs-nox, elpa-epc)"
    program = short_tmp / "hive-rpc"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m hive_rpc "$@"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    out_file = short_tmp / "out.el"
    setup = (
        f"(setq hive-rpc-epc-program {_lisp_str(str(program))}"
        f" hive-rpc-epc-data-dir {_lisp_str(str(hub_config.data_dir))}"
        f' hive-rpc-epc-extra-args (list "--socket" {_lisp_str(str(hub_config.socket))}'
        ' "--no-start")'
        f" hv-id {_lisp_str(NO_SUCH_ID)} hv-out-file {_lisp_str(str(out_file))})"
    )
    args = [emacs, "--batch", "-Q", "-L", str(REPO / "elisp")]
    for d in _elpa_dirs():
        args += ["-L", str(d)]
    args += ["--eval", "(require 'hive-rpc-epc)", "--eval", setup, "--eval", f"(progn {AGENT})"]
    with trio.fail_after(60):
        proc = await trio.run_process(args, capture_stdout=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    said = f"no prompt '{NO_SUCH_ID}'"
    plist = f'(:code -32001 :message "{said}" :data (:kind "not_found" :id "{NO_SUCH_ID}"))'
    assert out_file.read_text() == f"({plist} {plist} nil)"
    # the editor socket refuses the same call with the same code, message and data
    with pytest.raises(HiveError) as refused:
        await client.call("hive/poll", {"id": NO_SUCH_ID})
    e = refused.value
    assert (e.code, e.message, e.data) == (-32001, said, {"kind": "not_found", "id": NO_SUCH_ID})
