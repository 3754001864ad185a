//! A python with kazoo for the kazoo scripts: python3 itself if it imports kazoo, else a
//! virtualenv under the cargo target directory (`<target>/kazoo-venv`), made once with
//! `pip install kazoo` and reused by every later run and test binary. Without python3, its
//! venv module or PyPI, the caller skips ([`skip`]).

use super::SCRIPT_LIMIT;
use crate::locate::target_dir;
use crate::run::{run_ok, try_run};
use crate::skip::skip;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// `python3 -m venv`, then `pip install kazoo` over the network, on a loaded machine.
const VENV_LIMIT: Duration = Duration::from_secs(120);
const PIP_LIMIT: Duration = Duration::from_secs(300);

/// A python interpreter that imports kazoo.
#[derive(Clone, Debug)]
pub struct Kazoo {
    python: PathBuf,
}

impl Kazoo {
    /// The python to run kazoo scripts with, or `None` after a loud [`skip`] saying why there
    /// is none.
    pub fn find() -> Option<Kazoo> {
        // One provisioning per test process: its tests wait here for the first one.
        static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
        match FOUND.get_or_init(find_or_provision) {
            Ok(python) => Some(Kazoo { python: python.clone() }),
            Err(why) => {
                skip(why);
                None
            }
        }
    }

    /// A command running `script` (in `dir`) with `args` under this python.
    pub fn command(&self, dir: impl AsRef<Path>, script: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.current_dir(dir).arg(script).args(args);
        cmd
    }

    /// Runs `script` (in `dir`) with `args`; panics with its output unless it exits 0, else
    /// returns its stdout.
    pub fn run(&self, dir: impl AsRef<Path>, script: &str, args: &[&str]) -> String {
        run_ok(self.command(dir, script, args), SCRIPT_LIMIT)
    }
}

fn find_or_provision() -> Result<PathBuf, String> {
    let venv = target_dir().join("kazoo-venv");
    let venv_python = venv.join("bin").join("python");
    if imports_kazoo(&venv_python) {
        return Ok(venv_python);
    }
    let python3 = PathBuf::from("python3");
    match Command::new(&python3).arg("--version").output() {
        Err(e) => return Err(format!("python3 is not on PATH ({e}), so kazoo cannot run")),
        Ok(_) if imports_kazoo(&python3) => return Ok(python3),
        Ok(_) => {}
    }
    provision(&venv)?;
    Ok(venv_python)
}

/// Builds the venv in a directory of this process's own and renames it into place, so two
/// test processes provisioning at once cannot see a half-built one: the loser of the rename
/// drops its copy and uses the winner's.
fn provision(venv: &Path) -> Result<(), String> {
    // Straight to fd 2, past the test harness's capture: this explains a slow first run.
    let note = format!("provisioning kazoo into {} (once per target directory)\n", venv.display());
    let _ = std::io::stderr().write_all(note.as_bytes());
    let dir = venv.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let building = dir.join(format!("kazoo-venv.building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let built = build(&building);
    if built.is_ok() {
        if venv.exists() && !imports_kazoo(&venv.join("bin").join("python")) {
            // A venv left broken (say, its python was removed): move it aside, then replace it.
            let stale = dir.join(format!("kazoo-venv.stale-{}", std::process::id()));
            if std::fs::rename(venv, &stale).is_ok() {
                let _ = std::fs::remove_dir_all(&stale);
            }
        }
        // Err when another process got there first; its venv is as good as ours.
        let _ = std::fs::rename(&building, venv);
    }
    let _ = std::fs::remove_dir_all(&building);
    built?;
    match imports_kazoo(&venv.join("bin").join("python")) {
        true => Ok(()),
        false => Err(format!("the venv at {} does not import kazoo after provisioning", venv.display())),
    }
}

fn build(building: &Path) -> Result<(), String> {
    let mut venv = Command::new("python3");
    venv.args(["-m", "venv"]).arg(building);
    succeed(&mut venv, VENV_LIMIT, "python3 -m venv failed (on Debian: apt install python3-venv)")?;
    let mut pip = Command::new(building.join("bin").join("python"));
    pip.args(["-m", "pip", "install", "-q", "--disable-pip-version-check", "--retries", "2", "kazoo"]);
    succeed(&mut pip, PIP_LIMIT, "pip install kazoo failed (is PyPI reachable?)")
}

/// Runs `cmd`; `Err` saying `what` and the end of its stderr unless it exits 0.
fn succeed(cmd: &mut Command, limit: Duration, what: &str) -> Result<(), String> {
    let out = try_run(cmd, b"", limit).map_err(|why| format!("{what}: {why}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!("{what} ({}):\n{}", out.status, tail.join("\n")))
}

fn imports_kazoo(python: &Path) -> bool {
    Command::new(python).args(["-c", "import kazoo"]).output().is_ok_and(|o| o.status.success())
}
