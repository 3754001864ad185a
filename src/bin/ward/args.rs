//! Command-line parsing, by hand: the grammar is small and a parser crate would be the
//! largest dependency of the binary.

use std::fmt;
use std::time::Duration;
use ward_client::LockKind;

pub const DEFAULT_SERVER: &str = "127.0.0.1:7181";

pub const USAGE: &str = "\
usage: ward [--server ADDR[,ADDR...]] [--session-timeout-ms N] COMMAND

commands:
  ls PATH                               list the children of PATH
  tree PATH                             print PATH and every node below it
  get PATH                              print the data of PATH
  stat PATH                             print the metadata of PATH
  create [-e] [-s] [--hold] PATH [DATA] create a node and print its path
                                          -e ephemeral, -s sequential,
                                          --hold keep the session (and so the
                                          ephemerals) until killed or stdin closes
  set PATH DATA                         replace the data of PATH
  rm [-r] PATH                          delete PATH (-r: and everything below it)
  holders PATH                          the holder of the lock PATH, then the waiters
                                          in order, one a line: path token since
                                          session data
  members                               the ensemble's members: id, peer address,
                                          role, applied index, lag
  members add ID=PEER_ADDR              add a member (learner, caught up, then voter)
  members remove ID                     remove a member (the leader too)
  lock [--shared] [--timeout SECS] PATH [PATH...] -- CMD [ARGS...]
                                        run CMD while holding the lock PATH (all of
                                          them, taken all or nothing); --shared: the
                                          read side of a read/write lock
  semaphore --permits N [--timeout SECS] PATH -- CMD [ARGS...]
                                        run CMD while holding one of N permits
  elect --id NAME PATH -- CMD [ARGS...]
                                        campaign in the election PATH with NAME and
                                          run CMD while leader

lock, semaphore and elect give CMD WARD_FENCING_TOKEN and WARD_LOCK_PATH (its
contender node; comma-separated, one per PATH) in its environment, release when it
exits and exit with its status. If the lock or the leadership is lost, CMD gets
SIGTERM and ward exits 3; --timeout passing first exits 4 without running CMD; a
SIGTERM or SIGINT to ward stops CMD the same way and exits 128+signal; a CMD that
cannot be started exits 127.

The server defaults to $WARD_SERVER, then 127.0.0.1:7181. Use `--` before a DATA
that starts with '-'. Other errors exit 1, and a bad command line 2.";

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Invocation {
    pub server: String,
    pub session_timeout: Option<Duration>,
    pub command: Command,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Ls {
        path: String,
    },
    Tree {
        path: String,
    },
    Get {
        path: String,
    },
    Stat {
        path: String,
    },
    Create {
        path: String,
        data: Vec<u8>,
        ephemeral: bool,
        sequential: bool,
        hold: bool,
    },
    Set {
        path: String,
        data: Vec<u8>,
    },
    Rm {
        path: String,
        recursive: bool,
    },
    Holders {
        path: String,
    },
    Members,
    AddMember {
        id: u64,
        addr: String,
    },
    RemoveMember {
        id: u64,
    },
    /// `lock` (exclusive or `--shared`, over one or more paths) and `semaphore`.
    Lock {
        paths: Vec<String>,
        kind: LockKind,
        timeout: Option<Duration>,
        cmd: Vec<String>,
    },
    Elect {
        path: String,
        id: String,
        cmd: Vec<String>,
    },
}

/// A command line that does not parse; the binary exits with status 2.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Default)]
struct Flags {
    ephemeral: bool,
    sequential: bool,
    hold: bool,
    recursive: bool,
    timeout: Option<Duration>,
    id: Option<String>,
    shared: bool,
    permits: Option<u32>,
    /// How many positional words came before the first `--`.
    before_dashes: Option<usize>,
}

/// Parses the arguments after the program name. `env_server` is `$WARD_SERVER`, passed in
/// so that parsing stays a pure function.
pub fn parse<I>(args: I, env_server: Option<String>) -> Result<Invocation, UsageError>
where
    I: IntoIterator<Item = String>,
{
    let mut server = None;
    let mut session_timeout = None;
    let mut flags = Flags::default();
    let mut positional = Vec::new();
    let mut only_positional = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if only_positional {
            positional.push(arg);
            continue;
        }
        let (name, inline_value) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        match name.as_str() {
            "--" => {
                only_positional = true;
                flags.before_dashes = Some(positional.len());
            }
            "-h" | "--help" => {
                return Ok(Invocation {
                    server: DEFAULT_SERVER.to_owned(),
                    session_timeout: None,
                    command: Command::Help,
                })
            }
            "--server" => server = Some(value(&name, inline_value, &mut args)?),
            "--session-timeout-ms" => {
                let v = value(&name, inline_value, &mut args)?;
                let ms: u64 = v.parse().map_err(|_| UsageError(format!("--session-timeout-ms: not a number: {v}")))?;
                session_timeout = Some(Duration::from_millis(ms));
            }
            "--timeout" => {
                let v = value(&name, inline_value, &mut args)?;
                let secs = v.parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok());
                flags.timeout =
                    Some(secs.ok_or_else(|| UsageError(format!("--timeout: not a number of seconds: {v}")))?);
            }
            "--id" => flags.id = Some(value(&name, inline_value, &mut args)?),
            "--shared" => flags.shared = true,
            "--permits" => {
                let v = value(&name, inline_value, &mut args)?;
                let n = v.parse::<u32>().ok().filter(|n| *n > 0);
                flags.permits = Some(n.ok_or_else(|| UsageError(format!("--permits: not a positive number: {v}")))?);
            }
            "--hold" => flags.hold = true,
            "--ephemeral" => flags.ephemeral = true,
            "--sequential" => flags.sequential = true,
            "--recursive" => flags.recursive = true,
            long if long.starts_with("--") => return Err(UsageError(format!("unknown option {long}"))),
            short if short.starts_with('-') && short.len() > 1 => {
                for c in short[1..].chars() {
                    match c {
                        'e' => flags.ephemeral = true,
                        's' => flags.sequential = true,
                        'r' => flags.recursive = true,
                        other => return Err(UsageError(format!("unknown option -{other}"))),
                    }
                }
            }
            _ => positional.push(arg),
        }
    }
    let command = command(positional, flags)?;
    Ok(Invocation {
        server: server.or(env_server.filter(|s| !s.is_empty())).unwrap_or_else(|| DEFAULT_SERVER.to_owned()),
        session_timeout,
        command,
    })
}

fn value(name: &str, inline: Option<String>, rest: &mut impl Iterator<Item = String>) -> Result<String, UsageError> {
    inline.or_else(|| rest.next()).ok_or_else(|| UsageError(format!("{name} needs a value")))
}

fn command(positional: Vec<String>, flags: Flags) -> Result<Command, UsageError> {
    let mut words = positional.into_iter();
    let Some(verb) = words.next() else {
        return Err(UsageError("no command given".to_owned()));
    };
    let rest: Vec<String> = words.collect();
    let allowed: &[&str] = match verb.as_str() {
        "create" => &["-e", "-s", "--hold"],
        "rm" => &["-r"],
        "lock" => &["--timeout", "--shared"],
        "semaphore" => &["--timeout", "--permits"],
        "elect" => &["--id"],
        _ => &[],
    };
    for (set, name) in [
        (flags.ephemeral, "-e"),
        (flags.sequential, "-s"),
        (flags.hold, "--hold"),
        (flags.recursive, "-r"),
        (flags.timeout.is_some(), "--timeout"),
        (flags.id.is_some(), "--id"),
        (flags.shared, "--shared"),
        (flags.permits.is_some(), "--permits"),
    ] {
        if set && !allowed.contains(&name) {
            return Err(UsageError(format!("{verb} does not take {name}")));
        }
    }
    let arity = |min: usize, max: usize| -> Result<(), UsageError> {
        if rest.len() < min || rest.len() > max {
            Err(UsageError(format!("wrong number of arguments for {verb}")))
        } else {
            Ok(())
        }
    };
    let path = || rest.first().cloned().unwrap_or_default();
    let data = || rest.get(1).map(|d| d.as_bytes().to_vec()).unwrap_or_default();
    Ok(match verb.as_str() {
        "ls" => {
            arity(1, 1)?;
            Command::Ls { path: path() }
        }
        "tree" => {
            arity(1, 1)?;
            Command::Tree { path: path() }
        }
        "get" => {
            arity(1, 1)?;
            Command::Get { path: path() }
        }
        "stat" => {
            arity(1, 1)?;
            Command::Stat { path: path() }
        }
        "create" => {
            arity(1, 2)?;
            Command::Create {
                path: path(),
                data: data(),
                ephemeral: flags.ephemeral,
                sequential: flags.sequential,
                hold: flags.hold,
            }
        }
        "set" => {
            arity(2, 2)?;
            Command::Set { path: path(), data: data() }
        }
        "rm" => {
            arity(1, 1)?;
            Command::Rm { path: path(), recursive: flags.recursive }
        }
        "holders" => {
            arity(1, 1)?;
            Command::Holders { path: path() }
        }
        "members" => match rest.first().map(String::as_str) {
            None => Command::Members,
            Some("add") => {
                arity(2, 2)?;
                let spec = &rest[1];
                let (id, addr) = spec
                    .split_once('=')
                    .and_then(|(id, addr)| Some((id.parse().ok()?, addr.to_owned())))
                    .ok_or_else(|| UsageError(format!("members add needs ID=PEER_ADDR, not {spec:?}")))?;
                Command::AddMember { id, addr }
            }
            Some("remove") => {
                arity(2, 2)?;
                let id = rest[1]
                    .parse()
                    .map_err(|_| UsageError(format!("members remove needs an id, not {:?}", rest[1])))?;
                Command::RemoveMember { id }
            }
            Some(other) => return Err(UsageError(format!("unknown members command {other}"))),
        },
        "lock" => {
            let (paths, cmd) = paths_and_command(&verb, rest, flags.before_dashes, usize::MAX)?;
            let kind = if flags.shared { LockKind::Shared } else { LockKind::Exclusive };
            Command::Lock { paths, kind, timeout: flags.timeout, cmd }
        }
        "semaphore" => {
            let permits = flags.permits.ok_or_else(|| UsageError("semaphore needs --permits N".to_owned()))?;
            let (paths, cmd) = paths_and_command(&verb, rest, flags.before_dashes, 1)?;
            Command::Lock { paths, kind: LockKind::Semaphore { permits }, timeout: flags.timeout, cmd }
        }
        "elect" => {
            let id = flags.id.clone().ok_or_else(|| UsageError("elect needs --id NAME".to_owned()))?;
            let (mut paths, cmd) = paths_and_command(&verb, rest, flags.before_dashes, 1)?;
            Command::Elect { path: paths.remove(0), id, cmd }
        }
        other => return Err(UsageError(format!("unknown command {other}"))),
    })
}

/// `PATH [PATH...] -- CMD [ARGS...]`: one to `max_paths` words before the `--`, at least
/// one after it. Requiring the `--` keeps CMD's own options (`sh -c`) away from ours.
fn paths_and_command(
    verb: &str,
    mut rest: Vec<String>,
    before_dashes: Option<usize>,
    max_paths: usize,
) -> Result<(Vec<String>, Vec<String>), UsageError> {
    let form = if max_paths == 1 { "PATH" } else { "PATH [PATH...]" };
    let needs = || UsageError(format!("{verb} needs {form} -- CMD [ARGS...]"));
    // `before_dashes` counts the verb too.
    let paths = before_dashes.and_then(|n| n.checked_sub(1)).ok_or_else(needs)?;
    if paths == 0 || paths > max_paths || rest.len() <= paths {
        return Err(needs());
    }
    let cmd = rest.split_off(paths);
    Ok((rest, cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Invocation, UsageError> {
        parse(args.iter().map(|s| s.to_string()), None)
    }

    #[test]
    fn parses_create_with_flags_anywhere() {
        let inv = p(&["--server", "h:1", "create", "-es", "--hold", "/a", "x"]).expect("parses");
        assert_eq!(inv.server, "h:1");
        assert_eq!(
            inv.command,
            Command::Create { path: "/a".into(), data: b"x".to_vec(), ephemeral: true, sequential: true, hold: true }
        );
    }

    #[test]
    fn server_comes_from_flag_then_env_then_default() {
        let env = Some("e:2".to_string());
        let from_env = parse(["ls".into(), "/".into()], env.clone()).expect("parses");
        assert_eq!(from_env.server, "e:2");
        let flag = parse(["--server=f:3".into(), "ls".into(), "/".into()], env).expect("parses");
        assert_eq!(flag.server, "f:3");
        assert_eq!(p(&["ls", "/"]).expect("parses").server, DEFAULT_SERVER);
    }

    #[test]
    fn double_dash_allows_data_with_a_dash() {
        let inv = p(&["set", "--", "/a", "-1"]).expect("parses");
        assert_eq!(inv.command, Command::Set { path: "/a".into(), data: b"-1".to_vec() });
    }

    #[test]
    fn parses_lock_and_elect_with_the_command_after_dashes() {
        let inv = p(&["lock", "--timeout", "1.5", "/l", "--", "sh", "-c", "echo --timeout"]).expect("parses");
        let cmd = vec!["sh".to_string(), "-c".into(), "echo --timeout".into()];
        let paths = vec!["/l".to_string()];
        let timeout = Some(Duration::from_millis(1500));
        let kind = LockKind::Exclusive;
        assert_eq!(inv.command, Command::Lock { paths: paths.clone(), kind, timeout, cmd: cmd.clone() });
        let inv = p(&["lock", "/l", "--timeout=2", "--", "sh", "-c", "echo --timeout"]).expect("parses");
        let timeout = Some(Duration::from_secs(2));
        assert_eq!(inv.command, Command::Lock { paths: paths.clone(), kind, timeout, cmd: cmd.clone() });
        let inv = p(&["lock", "--shared", "/a", "/b", "--", "sh"]).expect("parses");
        let (paths, cmd) = (vec!["/a".to_string(), "/b".into()], vec!["sh".to_string()]);
        assert_eq!(inv.command, Command::Lock { paths, kind: LockKind::Shared, timeout: None, cmd: cmd.clone() });
        let inv = p(&["semaphore", "/s", "--permits", "3", "--", "sh"]).expect("parses");
        let (paths, kind) = (vec!["/s".to_string()], LockKind::Semaphore { permits: 3 });
        assert_eq!(inv.command, Command::Lock { paths, kind, timeout: None, cmd });
        let inv = p(&["elect", "/e", "--id", "n1", "--", "./lead.sh", "-v"]).expect("parses");
        let cmd = vec!["./lead.sh".to_string(), "-v".into()];
        assert_eq!(inv.command, Command::Elect { path: "/e".into(), id: "n1".into(), cmd });
        assert_eq!(p(&["holders", "/l"]).expect("parses").command, Command::Holders { path: "/l".into() });
    }

    #[test]
    fn refuses_bad_command_lines() {
        for bad in [
            &[][..],
            &["frob", "/"],
            &["ls"],
            &["ls", "/", "/b"],
            &["ls", "-e", "/"],
            &["rm", "-x", "/a"],
            &["--session-timeout-ms", "soon", "ls", "/"],
            &["--server"],
            &["lock", "/l"],
            &["lock", "/l", "true"],
            &["lock", "/l", "--"],
            &["lock", "--", "/l", "true"],
            &["lock", "--timeout", "soon", "/l", "--", "true"],
            &["lock", "--timeout", "-1", "/l", "--", "true"],
            &["lock", "--id", "a", "/l", "--", "true"],
            &["elect", "/e", "--", "true"],
            &["elect", "--id", "a", "--timeout", "1", "/e", "--", "true"],
            &["elect", "--id", "a", "/e", "/f", "--", "true"],
            &["semaphore", "/s", "--", "true"],
            &["semaphore", "--permits", "0", "/s", "--", "true"],
            &["semaphore", "--permits", "2", "/s", "/t", "--", "true"],
            &["lock", "--permits", "2", "/s", "--", "true"],
            &["elect", "--shared", "--id", "a", "/e", "--", "true"],
            &["holders"],
            &["ls", "--timeout", "1", "/"],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }
}
