//! Installing (README "Set up"): `cargo install --path server` installs `ward-server` and
//! `cargo install --path .` installs `ward`, and nothing else (the test helpers live in
//! packages of their own). Run with this test's own profile and target directory, so that
//! cargo reuses what is built already.

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use ward_testkit::locate::{cargo, profile, target_dir};
use ward_testkit::run::run_ok;
use ward_testkit::TempDir;

/// Building `ward` when `cargo test -p ward-server` has not: a minute or two on a loaded
/// machine.
const INSTALL: Duration = Duration::from_secs(900);

#[test]
fn install_puts_ward_server_and_ward_alone_in_bin() {
    let root = TempDir::new("install");
    let server = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = server.parent().expect("the workspace above server/");
    for package in [server, workspace] {
        run_ok(install(package, root.path()), INSTALL);
    }
    let bin = std::fs::read_dir(root.path().join("bin")).expect("read DIR/bin");
    let mut installed: Vec<String> =
        bin.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    installed.sort();
    let exe = std::env::consts::EXE_SUFFIX;
    assert_eq!(installed, [format!("ward{exe}"), format!("ward-server{exe}")]);
}

/// `cargo install --path PACKAGE --root ROOT`, offline and from the lock file, with this
/// test's profile and target directory.
fn install(package: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(cargo());
    cmd.args(["install", "--quiet", "--offline", "--locked", "--profile", &profile(), "--path"])
        .arg(package)
        .arg("--root")
        .arg(root)
        .env("CARGO_TARGET_DIR", target_dir());
    cmd
}
