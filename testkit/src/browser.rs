//! Debian's headless Chromium driven by Playwright (npm's `playwright-core`, which brings no
//! browser of its own), for the web console's browser tests. .ci/run installs `chromium`;
//! the npm dependencies are installed once per target directory (`<target>/console-node`)
//! with `npm ci` from the test's committed package.json and package-lock.json. Without
//! Chromium, Node or the npm registry, the caller skips ([`skip`]).

use crate::locate::target_dir;
use crate::run::try_run;
use crate::skip::skip;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// `npm ci` of one package over the network, on a loaded machine.
const NPM_LIMIT: Duration = Duration::from_secs(300);

/// Where Chromium is, unless `WARD_CHROMIUM` says otherwise.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium, and a directory whose `node_modules` has the test's npm dependencies.
#[derive(Clone, Debug)]
pub struct Browser {
    pub chromium: PathBuf,
    /// Has `node_modules/` and a copy of the package files it was installed from.
    pub deps: PathBuf,
}

impl Browser {
    /// Chromium, node and the npm dependencies of the package in `package_dir` (its
    /// package.json and package-lock.json), or `None` after a loud [`skip`] saying what is
    /// missing.
    pub fn find(package_dir: &Path) -> Option<Browser> {
        static FOUND: OnceLock<Result<Browser, String>> = OnceLock::new();
        match FOUND.get_or_init(|| find(package_dir)) {
            Ok(browser) => Some(browser.clone()),
            Err(why) => {
                skip(why);
                None
            }
        }
    }

    /// `node script args...`, with the browser's location and the dependencies in the
    /// environment (`WARD_CHROMIUM`, `WARD_NODE_DEPS`).
    pub fn node(&self, script: &Path, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(script).args(args).env("WARD_CHROMIUM", &self.chromium).env("WARD_NODE_DEPS", &self.deps);
        cmd
    }
}

fn find(package_dir: &Path) -> Result<Browser, String> {
    let chromium = std::env::var_os("WARD_CHROMIUM").map_or_else(|| PathBuf::from(CHROMIUM), PathBuf::from);
    if !chromium.exists() {
        return Err(format!("{} is missing: install Debian's chromium package (.ci/run does)", chromium.display()));
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        _ => return Err("node is not on PATH (the console's browser tests run Playwright under Node)".into()),
    }
    let deps = target_dir().join("console-node");
    if !installed(&deps, package_dir) {
        provision(&deps, package_dir)?;
    }
    Ok(Browser { chromium, deps })
}

/// True when `deps` has node_modules installed from the same lock file as `package_dir`'s.
fn installed(deps: &Path, package_dir: &Path) -> bool {
    let lock = |dir: &Path| std::fs::read(dir.join("package-lock.json")).ok();
    deps.join("node_modules").join("playwright-core").join("package.json").exists()
        && lock(deps).is_some()
        && lock(deps) == lock(package_dir)
}

/// Installs into a directory of this process's own and renames it into place, so two test
/// processes provisioning at once cannot see a half-installed one.
fn provision(deps: &Path, package_dir: &Path) -> Result<(), String> {
    let note =
        format!("installing the console tests' npm packages into {} (once per target directory)\n", deps.display());
    let _ = std::io::stderr().write_all(note.as_bytes());
    let parent = deps.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let building = parent.join(format!("console-node.building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let built = build(&building, package_dir);
    if built.is_ok() {
        if deps.exists() {
            let stale = parent.join(format!("console-node.stale-{}", std::process::id()));
            if std::fs::rename(deps, &stale).is_ok() {
                let _ = std::fs::remove_dir_all(&stale);
            }
        }
        // Err when another process got there first; its copy is as good as ours.
        let _ = std::fs::rename(&building, deps);
    }
    let _ = std::fs::remove_dir_all(&building);
    built?;
    match installed(deps, package_dir) {
        true => Ok(()),
        false => Err(format!("{} has no playwright-core after npm ci", deps.display())),
    }
}

fn build(building: &Path, package_dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(building).map_err(|e| format!("cannot create {}: {e}", building.display()))?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(package_dir.join(file), building.join(file))
            .map_err(|e| format!("cannot copy {file} from {}: {e}", package_dir.display()))?;
    }
    let mut npm = Command::new("npm");
    npm.current_dir(building).args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
    let out = try_run(&mut npm, b"", NPM_LIMIT).map_err(|why| format!("npm ci failed: {why}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(format!("npm ci failed ({}); is the npm registry reachable?\n{}", out.status, stderr.trim()))
}
