//! The command line. `--help` is generated from the doc comments of [`Settings`].

use super::settings::Settings;
use clap::Parser;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Every option can also be set by an environment variable, WARD_ and the option's name in
capitals with - as _ (WARD_LISTEN, WARD_ZK_LISTEN, WARD_MIN_SESSION_TIMEOUT_MS, ...), or by
a key of the --config file, the option's name (listen = \"127.0.0.1:7181\"). The command line
wins over the environment, which wins over the file, which wins over the defaults.
On/off options take --in-memory or --in-memory=false.

The first line on stdout is `ward-server listening on ADDR`. Logs go to stderr; RUST_LOG
sets the level (e.g. info, ward_server=debug). See docs/operations.md.";

/// Ward server: the znode tree, sessions, locks and watches, on one machine or an ensemble.
#[derive(Parser, Debug)]
#[command(name = "ward-server", version, after_help = AFTER_HELP, args_override_self = true)]
pub struct Cli {
    /// Read options from this TOML file (keys: the option names, e.g. zk-listen = "off")
    /// [env: WARD_CONFIG]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Breaks one promise on purpose, for the tests that show `ward check` catching it
    /// (ward_server::unsafe_break): hidden, and refused unless WARD_ALLOW_UNSAFE_BREAK=1.
    /// Not a setting: no environment variable or config key sets it.
    #[arg(long, value_name = "NAME", hide = true)]
    pub unsafe_break: Option<ward_server::unsafe_break::Break>,
    #[command(flatten)]
    pub settings: Settings,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn unsafe_break_parses_and_is_hidden_from_help() {
        let cli = Cli::try_parse_from(["ward-server", "--unsafe-break", "stale-follower-read"]).expect("parse");
        assert_eq!(cli.unsafe_break, Some(ward_server::unsafe_break::Break::StaleFollowerRead));
        assert!(Cli::try_parse_from(["ward-server", "--unsafe-break", "sometimes"]).is_err());
        let help = Cli::command().render_long_help().to_string();
        assert!(!help.contains("unsafe"), "{help}");
    }

    #[test]
    fn later_flags_win_and_switches_take_an_optional_value() {
        let cli =
            Cli::try_parse_from(["ward-server", "--listen", "a:1", "--in-memory", "--listen=b:2", "--join=false"])
                .expect("parse");
        assert_eq!(cli.settings.listen.map(|a| a.to_string()), Some("b:2".into()));
        assert_eq!((cli.settings.in_memory, cli.settings.join), (Some(true), Some(false)));
    }
}
