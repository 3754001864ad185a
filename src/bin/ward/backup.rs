//! `ward backup FILE`: a backup of a running member, taken through its admin listener
//! (`GET /api/backup` with the admin token), written beside FILE, fsynced, checked whole
//! (`ward_proto::backup::verify`), and only then renamed to FILE. A FILE that exists is
//! never replaced: an earlier backup is worth keeping. `ward backup --check FILE` checks an
//! existing one the same way and says what it holds.

use crate::cli::BackupArgs;
use crate::commands::Failure;
use crate::output::Out;
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;
use ward_proto::backup::{verify, BackupFileError, BackupHeader};

/// Time to connect to the admin listener.
const CONNECT: Duration = Duration::from_secs(10);
/// Time any one read may wait: the member may first take a snapshot of a large state.
const READ: Duration = Duration::from_secs(900);
/// The most of a refusal's body read.
const REFUSAL: u64 = 64 * 1024;

/// Why no backup was written.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{}: exists; a backup never replaces a file (move it away or choose another name)", .0.display())]
    Exists(PathBuf),
    #[error("admin token file {}: {source}", path.display())]
    Token { path: PathBuf, source: std::io::Error },
    #[error("admin token file {}: empty", .0.display())]
    EmptyToken(PathBuf),
    #[error("{admin}: {step}: {source}")]
    Net { admin: String, step: &'static str, source: std::io::Error },
    #[error("{admin} answered {status}: {why}")]
    Refused { admin: String, status: u16, why: String },
    #[error("{admin}: not an HTTP answer ({0})", admin = .1)]
    NotHttp(String, String),
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Check { path: PathBuf, source: BackupFileError },
}

pub fn run(args: BackupArgs, out: Out) -> Result<u8, Failure> {
    let header = match args.check {
        true => check(&args.file),
        false => take(&args),
    };
    let header = header.map_err(Failure::Backup)?;
    let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    if out.json() {
        out.value(&json!({
            "file": args.file,
            "ensemble": header.ensemble,
            "member": header.member,
            "zxid": header.zxid,
            "index": header.index,
            "term": header.term,
            "bytes": bytes,
        }))?;
    } else {
        out.line(&format!(
            "{}: backup of ensemble {:?} from member {}, every write up to zxid {:#x} (log index {}, term {}), {bytes} bytes",
            args.file.display(),
            header.ensemble,
            header.member,
            header.zxid,
            header.index,
            header.term,
        ))?;
    }
    Ok(0)
}

/// An existing backup, checked whole.
fn check(path: &Path) -> Result<BackupHeader, BackupError> {
    let mut file = File::open(path).map_err(file_error(path))?;
    verify(&mut BufReader::with_capacity(1 << 20, &mut file))
        .map_err(|source| BackupError::Check { path: path.to_path_buf(), source })
}

fn take(args: &BackupArgs) -> Result<BackupHeader, BackupError> {
    if args.file.exists() {
        return Err(BackupError::Exists(args.file.clone()));
    }
    let token_file = args.admin_token_file.as_deref().unwrap_or(Path::new(""));
    let token = read_token(token_file)?;
    let admin = args.admin.clone();
    let net = |step| {
        let admin = admin.clone();
        move |source| BackupError::Net { admin, step, source }
    };
    let addr = admin.to_socket_addrs().map_err(net("resolve"))?.next();
    let addr = addr.ok_or_else(|| net("resolve")(std::io::ErrorKind::NotFound.into()))?;
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT).map_err(net("connect"))?;
    stream.set_read_timeout(Some(READ)).map_err(net("connect"))?;
    let request = format!(
        "GET /api/backup HTTP/1.1\r\nHost: {admin}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(net("send the request"))?;
    let mut reader = BufReader::with_capacity(1 << 16, stream);
    let (status, length) = read_head(&mut reader, &admin)?;
    if status != 200 {
        let mut body = String::new();
        let _ = reader.take(REFUSAL).read_to_string(&mut body);
        let why = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or(body);
        return Err(BackupError::Refused { admin, status, why: why.trim().to_string() });
    }
    let partial = with_suffix(&args.file, ".partial");
    let written = write_out(&mut reader, length, &partial, &admin);
    let checked = written.and_then(|()| {
        let mut file = File::open(&partial).map_err(file_error(&partial))?;
        verify(&mut BufReader::with_capacity(1 << 20, &mut file))
            .map_err(|source| BackupError::Check { path: partial.clone(), source })
    });
    let header = match checked {
        Ok(header) => header,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, &args.file).map_err(file_error(&args.file))?;
    let dir = args.file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir).and_then(|d| d.sync_all()).map_err(file_error(dir))?;
    Ok(header)
}

/// The status and the body's length from the answer's head.
fn read_head(reader: &mut impl BufRead, admin: &str) -> Result<(u16, Option<u64>), BackupError> {
    let not_http = |what: &str| BackupError::NotHttp(what.to_string(), admin.to_string());
    let mut line = String::new();
    let mut read_line = |line: &mut String| {
        line.clear();
        reader.take(8192).read_line(line).map_err(|source| BackupError::Net {
            admin: admin.to_string(),
            step: "read the answer",
            source,
        })
    };
    read_line(&mut line)?;
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| not_http(line.trim()))?;
    let mut length = None;
    for _ in 0..100 {
        if read_line(&mut line)? == 0 {
            return Err(not_http("the head was cut short"));
        }
        let text = line.trim_end();
        if text.is_empty() {
            return Ok((status, length));
        }
        if let Some((name, value)) = text.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.trim().parse().map_err(|_| not_http(text))?);
            }
        }
    }
    Err(not_http("too many header lines"))
}

/// The body (`length` bytes) into a new file `path`, fsynced.
fn write_out(reader: &mut impl Read, length: Option<u64>, path: &Path, admin: &str) -> Result<(), BackupError> {
    let Some(length) = length else {
        return Err(BackupError::NotHttp("no Content-Length".into(), admin.to_string()));
    };
    let mut file = OpenOptions::new().write(true).create_new(true).open(path).map_err(file_error(path))?;
    let copied = std::io::copy(&mut reader.take(length), &mut file).map_err(|source| BackupError::Net {
        admin: admin.to_string(),
        step: "receive the backup",
        source,
    })?;
    if copied != length {
        let cut = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("{copied} of {length} bytes"));
        return Err(BackupError::Net { admin: admin.to_string(), step: "receive the backup", source: cut });
    }
    file.sync_all().map_err(file_error(path))
}

fn read_token(path: &Path) -> Result<String, BackupError> {
    let text = std::fs::read_to_string(path).map_err(|source| BackupError::Token { path: path.into(), source })?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        return Err(BackupError::EmptyToken(path.into()));
    }
    Ok(token)
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let path = path.to_path_buf();
    move |source| BackupError::File { path, source }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
