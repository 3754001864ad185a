//! Where the running test's build lives (`<target>/<profile>/deps/<test exe>`), and the
//! `ward-server` and `ward-contender` binaries and the client's examples in it; and, for a
//! program run outside `cargo test`, the `ward-server` installed beside it
//! ([`server_binary_beside`]).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::error::HarnessError;

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

/// The cargo that runs the tests (`$CARGO`), to build or install with.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(OsString::from))
        .unwrap_or_else(|| OsString::from("cargo"))
}

/// The cargo profile the running test was built with (`dev` for `target/debug`).
pub fn profile() -> String {
    match profile_dir().file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(other) => other.to_owned(),
    }
}

/// The `ward-server` binary: `$WARD_SERVER_BIN`, or the one in this test's own profile
/// directory, built (once per test process) with the same profile.
pub fn server_binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("WARD_SERVER_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => built_binary("ward-server", "ward-server"),
    })
}

/// The `ward-contender` test helper (package `ward-contender`, testkit/contender), in this
/// test's own profile directory, built (once per test process) with the same profile. It is
/// a package of its own so that `cargo install --path .` installs `ward` alone, which also
/// means cargo sets no `CARGO_BIN_EXE_ward-contender` for the root package's tests.
pub fn contender_binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built_binary("ward-contender", "ward-contender"))
}

/// `bin` of `package` in [`profile_dir`], after a `cargo build` of it there.
fn built_binary(package: &str, bin: &str) -> PathBuf {
    let profile_dir = profile_dir();
    let path = profile_dir.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX));
    build(&profile_dir, package, ("--bin", bin), &path);
    path
}

/// The example `example` of `package` (e.g. `ward-client`'s `client/examples/lock.rs`), in
/// [`profile_dir`]`/examples`, after a `cargo build` of it there: the tests that run the
/// examples against a real server, so that what the README points to keeps working.
pub fn example_binary(package: &str, example: &str) -> PathBuf {
    let profile_dir = profile_dir();
    let path = profile_dir.join("examples").join(format!("{example}{}", std::env::consts::EXE_SUFFIX));
    build(&profile_dir, package, ("--example", example), &path);
    path
}

/// Runs `cargo build` of `target` (`("--bin", name)` or `("--example", name)`) even when it
/// exists: `cargo test` of one package does not build other packages' binaries, and a stale
/// one would test old code. When cargo is up to date this takes a fraction of a second.
fn build(profile_dir: &Path, package: &str, target: (&str, &str), path: &Path) {
    let profile = profile();
    let (kind, name) = target;
    let mut cmd = Command::new(cargo());
    cmd.args(["build", "-q", "-p", package, kind, name])
        .arg("--profile")
        .arg(&profile)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // What cargo set for the running test (its package's name, manifest directory, ...) is
    // none of this build's business, and build scripts that watch those variables (ring's
    // does) would otherwise rebuild their crate here and again for the next `cargo test`.
    for (var, _) in std::env::vars_os() {
        let var_str = var.to_string_lossy();
        let set_for_the_test = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_PRIMARY_"]
            .iter()
            .any(|prefix| var_str.starts_with(prefix));
        if set_for_the_test || var_str == "OUT_DIR" || var_str == "CARGO_TARGET_TMPDIR" {
            cmd.env_remove(&var);
        }
    }
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
    let what = format!("`cargo build -p {package} {kind} {name} --profile {profile}` into {}", profile_dir.display());
    match outcome {
        Ok((status, _)) if status.success() => {}
        Ok((status, err)) if !path.exists() => panic!("{what} failed ({status}):\n{err}"),
        Err(e) if !path.exists() => panic!("cannot run {what}: {e}"),
        _ => eprintln!("warning: {what} failed; using the existing {}", path.display()),
    }
}

/// The `ward-server` binary for a program that is not a test (`ward check`): `$WARD_SERVER_BIN`,
/// else the one in the running executable's own directory (`cargo install` puts both there;
/// so does `cargo build`, in `target/<profile>`), else in the cargo target directory
/// (`$CARGO_TARGET_DIR` or `./target`, release before debug). Builds nothing.
pub fn server_binary_beside() -> Result<PathBuf, HarnessError> {
    if let Some(bin) = std::env::var_os("WARD_SERVER_BIN") {
        let bin = PathBuf::from(bin);
        return match bin.is_file() {
            true => Ok(bin),
            false => Err(HarnessError::ServerBinaryNotFound { looked: vec![bin] }),
        };
    }
    let name = format!("ward-server{}", std::env::consts::EXE_SUFFIX);
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        // A test binary lives one level further down, in `deps/`.
        if dir.file_name().is_some_and(|n| n == "deps") {
            dirs.extend(dir.parent().map(Path::to_path_buf));
        }
        dirs.push(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    dirs.extend(["release", "debug"].map(|profile| target.join(profile)));
    let looked: Vec<PathBuf> = dirs.into_iter().map(|dir| dir.join(&name)).collect();
    match looked.iter().find(|path| path.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(HarnessError::ServerBinaryNotFound { looked }),
    }
}
