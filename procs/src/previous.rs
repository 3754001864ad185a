//! The `ward-server` of the previous release, for the tests that upgrade an ensemble member
//! by member and go back: built once from that release's commit (`git archive` of it into
//! `<target>/previous-release/COMMIT/`, then `cargo build` there with a target directory of
//! its own, so that nothing of the current build is replaced) and kept as
//! `<target>/previous-release/COMMIT/ward-server`; later runs take it from there.
//!
//! It needs the repository's history (a clone, not an archive): without the commit the test
//! fails saying so.

use crate::locate::{cargo, target_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The previous release: the last commit of the release before the one that added release
/// levels (`server/src/peer/level.rs`). It speaks peer protocol 2 and says no level.
pub const PREVIOUS_RELEASE: &str = "b502db4e449fb66cf6f45ac3d825e4fe68a58b51";

/// The previous release's `ward-server`, built if need be (a minute or two, once).
pub fn previous_release_binary() -> PathBuf {
    let home = target_dir().join("previous-release").join(PREVIOUS_RELEASE);
    let binary = home.join(format!("ward-server{}", std::env::consts::EXE_SUFFIX));
    if binary.is_file() {
        return binary;
    }
    let (src, build_target) = (home.join("src"), home.join("target"));
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).unwrap_or_else(|e| panic!("mkdir {}: {e}", src.display()));
    let tar = home.join("src.tar");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("."));
    run(
        Command::new("git").arg("-C").arg(repo).args(["archive", "--format=tar", "-o"]).arg(&tar).arg(PREVIOUS_RELEASE),
        "git archive of the previous release (the test needs the repository's history)",
    );
    run(Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(&src), "unpacking the previous release");
    eprintln!("building the previous release's ward-server ({PREVIOUS_RELEASE}) into {}", home.display());
    run(
        Command::new(cargo())
            .args(["build", "-q", "-p", "ward-server", "--bin", "ward-server", "--target-dir"])
            .arg(&build_target)
            .current_dir(&src)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS"),
        "building the previous release's ward-server",
    );
    let built = build_target.join("debug").join(binary.file_name().unwrap_or_default());
    // Renamed into place last: a build cut short leaves no binary to be taken for whole.
    let partial = home.join("ward-server.partial");
    std::fs::copy(&built, &partial).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    std::fs::rename(&partial, &binary).unwrap_or_else(|e| panic!("rename to {}: {e}", binary.display()));
    // The binary is all that is kept: the sources and the build take room for nothing.
    let _ = (std::fs::remove_dir_all(&src), std::fs::remove_dir_all(&build_target), std::fs::remove_file(&tar));
    binary
}

fn run(cmd: &mut Command, what: &str) {
    let out =
        cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: cannot run {:?}: {e}", cmd.get_program()));
    if !out.status.success() {
        panic!("{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}
