"""One transaction from the user's view (issue 21): the files reach --out only after the ledger entry is
complete. PostgreSQL is stopped between the draw and 'complete': the charge stands, nothing is
published, one line says so and how to finish; 'ledger complete' finishes it once the server is back."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.data.loading import load_curves
from fdp_core.releases.mean import MeanSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
FRL = MeanSettings(mechanism="frl", epsilon=1.0, tau=1.0, M=8)


class Cluster:
    """A throw-away PostgreSQL cluster this test may stop and start (the session server is shared)."""

    def __init__(self):
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
        if not found:
            pytest.skip("PostgreSQL is not installed (no initdb)")
        self.bin = found[0].parent
        self.root = Path(tempfile.mkdtemp(prefix="fdp_pg_stop_"))
        self.prefix = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.prefix = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.data = self.root / "data"
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "fdp", "-E", "UTF8", "--locale=C", "--no-sync")
        self.start()
        self.url = f"postgresql://fdp@127.0.0.1:{self.port}/postgres"

    def command(self, *cmd) -> list[str]:
        return self.prefix + [str(self.bin / cmd[0]), *cmd[1:]]

    def run(self, *cmd):
        subprocess.run(self.command(*cmd), check=True, capture_output=True, timeout=120)

    def start(self):
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "start", "-o",
                 f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off")

    def stop_command(self) -> list[str]:
        return self.command("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def close(self):
        subprocess.run(self.stop_command(), capture_output=True, timeout=120)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def cluster():
    pytest.importorskip("psycopg")
    c = Cluster()
    yield c
    c.close()


STOP_DRIVER = """
import json, subprocess, sys
import fdp_core.commands.replay as replay_command
stop = json.loads(sys.argv[1])
real_export = replay_command.export_folder

def export_then_stop_the_server(*args, **kwargs):
    out = real_export(*args, **kwargs)   # the drawn release, written to the staging folder
    subprocess.run(stop, check=True, capture_output=True, timeout=120)
    return out

replay_command.export_folder = export_then_stop_the_server
from fdp_core.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "fdp_core", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_postgres_stopped_between_draw_and_complete_publishes_nothing_and_says_so(cluster, tmp_path):
    release = export.commit_mean(Ledger(3.0, 1e-5), load_curves(EXAMPLE), FRL, data_label="example_curves.csv")
    config = tmp_path / "config.yaml"
    config.write_text(export.config_yaml(release.config))
    code, _, err = run_cli("ledger", "init", "--ledger", cluster.url, "--data", EXAMPLE, "--epsilon", 3, "--delta", 0)
    assert code == 0, err
    out = tmp_path / "published"
    proc = subprocess.run([sys.executable, "-c", STOP_DRIVER, json.dumps(cluster.stop_command()), "replay",
                           str(config), "--data", str(EXAMPLE), "--ledger", cluster.url, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "", proc
    err = proc.stderr
    assert err.count("\n") == 1 and err.startswith("error: the ledger database failed after the noise was drawn")
    assert "the charge stands" in err and "NOTHING was published" in err and "ledger complete --release" in err
    assert not out.exists()  # no publishable file in --out
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".published.fdp-staging-")]
    assert len(staged) == 1 and (staged[0] / "release.json").is_file()
    # The server is back: the printed command finishes the release.
    cluster.start()
    finish = err.split("run '", 1)[1].split("'", 1)[0].split()
    assert finish[:4] == ["python", "-m", "fdp_core", "ledger"]
    code, stdout, err = run_cli(*finish[3:])
    assert code == 0, err
    assert (out / "release.json").is_file() and not staged[0].exists()
    code, stdout, err = run_cli("ledger", "show", "--ledger", cluster.url, "--data", EXAMPLE)
    shown = json.loads(stdout)
    assert [e["status"] for e in shown["entries"]] == ["complete"]
    assert json.loads((out / "release.json").read_text())["id"] == shown["entries"][0]["id"]
