//! Where the running test's build lives (`<target>/<profile>/deps/<test exe>`), and the
//! `ward-server` binary in it.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// `<target>/<profile>`: the directory the running test binary was built into.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the running test's exe: {e}"));
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} does not live in <target>/<profile>/deps", exe.display()))
        .to_path_buf()
}

/// The cargo target directory of the running test (`$CARGO_TARGET_DIR` or `target/`).
pub fn target_dir() -> PathBuf {
    let profile = profile_dir();
    profile.parent().map_or_else(|| profile.clone(), Path::to_path_buf)
}

/// The `ward-server` binary: `$WARD_SERVER_BIN`, or the one in this test's own profile
/// directory, built (once per test process) with the same profile.
pub fn server_binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("WARD_SERVER_BIN") {
            return PathBuf::from(bin);
        }
        let profile_dir = profile_dir();
        let bin = profile_dir.join(format!("ward-server{}", std::env::consts::EXE_SUFFIX));
        build_server(&profile_dir, &bin);
        bin
    })
}

/// Runs `cargo build` for the server even when a binary exists: `cargo test` of one package
/// does not build other packages' binaries, and a stale one would test old code. When cargo
/// is up to date this takes a fraction of a second.
fn build_server(profile_dir: &Path, bin: &Path) {
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(OsString::from))
        .unwrap_or_else(|| OsString::from("cargo"));
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(other) => other.to_owned(),
    };
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", "ward-server", "--bin", "ward-server"])
        .arg("--profile")
        .arg(&profile)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(target_dir) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target_dir);
    }
    let outcome = cmd.spawn().and_then(|mut child| {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        child.wait().map(|status| (status, err))
    });
    match outcome {
        Ok((status, _)) if status.success() => {}
        Ok((status, err)) if !bin.exists() => panic!("cargo build of ward-server failed ({status}):\n{err}"),
        Err(e) if !bin.exists() => panic!("cannot run cargo to build ward-server: {e}"),
        _ => eprintln!("warning: could not rebuild ward-server; using {}", bin.display()),
    }
}
