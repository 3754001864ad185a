//! `ward tls ca create` and `ward tls cert create`: the certificates of `ward::certs`
//! written as files, a certificate (mode 0644) and its key (0600) side by side, never over
//! a file that exists unless `--force` says so.

use crate::cli::{TlsCaAction, TlsCaCreate, TlsCertAction, TlsCertCreate, TlsRole, TlsWhat};
use crate::commands::Failure;
use crate::output::Out;
use serde_json::json;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use ward::certs::{self, CertError, Leaf, Pem, Role};

/// A CA's default validity: five years, as Consul's.
const CA_DAYS: u32 = 1825;
/// A leaf's: one year.
const CERT_DAYS: u32 = 365;
/// The CA's files' default name, which `tls cert create` looks for in its --dir.
const CA_NAME: &str = "ward-ca";

/// Why `ward tls` wrote nothing (or not everything).
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    #[error("{}: exists; give --force to replace it", .0.display())]
    Exists(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Certs(#[from] CertError),
}

pub fn run(what: TlsWhat, out: Out) -> Result<u8, Failure> {
    let written = match what {
        TlsWhat::Ca { action: TlsCaAction::Create(args) } => ca_create(args),
        TlsWhat::Cert { action: TlsCertAction::Create(args) } => cert_create(args),
    };
    let files = written.map_err(Failure::Tls)?;
    if out.json() {
        out.value(&json!({ "cert": files.0, "key": files.1 }))?;
    } else {
        out.line(&files.0.display().to_string())?;
        out.line(&files.1.display().to_string())?;
    }
    Ok(0)
}

fn ca_create(args: TlsCaCreate) -> Result<(PathBuf, PathBuf), TlsFileError> {
    let files = pair(&args.files.dir, &args.name);
    refuse_existing(&files, args.files.force)?;
    let common_name = args.common_name.unwrap_or_else(certs::unique_ca_name);
    let ca = certs::new_ca(&common_name, args.files.days.unwrap_or(CA_DAYS))?;
    save(&args.files.dir, files, &ca, args.files.force)
}

fn cert_create(args: TlsCertCreate) -> Result<(PathBuf, PathBuf), TlsFileError> {
    let role = match args.role {
        TlsRole::Server => Role::Server,
        TlsRole::Client => Role::Client,
        TlsRole::Peer => Role::Peer,
    };
    let dir = &args.files.dir;
    let ca_files = pair(dir, CA_NAME);
    let ca = Pem {
        cert: read(args.ca.as_deref().unwrap_or(&ca_files.0))?,
        key: read(args.ca_key.as_deref().unwrap_or(&ca_files.1))?,
    };
    let name = match args.name {
        Some(name) => name,
        None => first_free(dir, role),
    };
    let files = pair(dir, &name);
    refuse_existing(&files, args.files.force)?;
    let leaf = Leaf {
        role,
        common_name: args.common_name.unwrap_or(name),
        ips: args.ip,
        dns: args.dns,
        days: args.files.days.unwrap_or(CERT_DAYS),
    };
    let cert = certs::new_cert(&ca, &leaf)?;
    save(dir, files, &cert, args.files.force)
}

/// `DIR/NAME.pem` and `DIR/NAME-key.pem`.
fn pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (dir.join(format!("{name}.pem")), dir.join(format!("{name}-key.pem")))
}

/// `ward-ROLE-N` for the first N with neither file, as Consul numbers its certificates: a
/// second server's certificate never lands on the first's.
fn first_free(dir: &Path, role: Role) -> String {
    (0..)
        .map(|n| format!("ward-{}-{n}", role.name()))
        .find(|name| {
            let (cert, key) = pair(dir, name);
            !cert.exists() && !key.exists()
        })
        .unwrap_or_else(|| format!("ward-{}", role.name()))
}

/// Both files are checked before either is written, so that a refusal writes nothing.
fn refuse_existing(files: &(PathBuf, PathBuf), force: bool) -> Result<(), TlsFileError> {
    match [&files.0, &files.1].into_iter().find(|path| path.exists()) {
        Some(path) if !force => Err(TlsFileError::Exists(path.clone())),
        _ => Ok(()),
    }
}

fn read(path: &Path) -> Result<String, TlsFileError> {
    std::fs::read_to_string(path).map_err(|source| TlsFileError::Io { path: path.to_path_buf(), source })
}

fn save(
    dir: &Path,
    (cert, key): (PathBuf, PathBuf),
    pem: &Pem,
    force: bool,
) -> Result<(PathBuf, PathBuf), TlsFileError> {
    std::fs::create_dir_all(dir).map_err(|source| TlsFileError::Io { path: dir.to_path_buf(), source })?;
    write(&key, &pem.key, 0o600, force)?;
    write(&cert, &pem.cert, 0o644, force)?;
    Ok((cert, key))
}

/// Writes a new file made with `mode`. With `force` a file in the way is removed first
/// rather than truncated: a key must never sit, even for a moment, in a file another user
/// may already have open or be allowed to read.
fn write(path: &Path, text: &str, mode: u32, force: bool) -> Result<(), TlsFileError> {
    let io = |source| TlsFileError::Io { path: path.to_path_buf(), source };
    if force {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
    }
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => TlsFileError::Exists(path.to_path_buf()),
            _ => io(e),
        })?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(io)
}
