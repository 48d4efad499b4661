//! Parses arguments, dispatches to one function per sub-command, maps the outcome to an exit
//! code (see `exit`). No logic lives here.

use clap::Parser;
use pulsar_chaos::{cli::Cli, commands, error::Error, exit, lifecycle};

fn main() {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            pulsar_chaos::errln!("error: cannot start the async runtime: {e}");
            std::process::exit(exit::INFRASTRUCTURE);
        }
    };
    let code = runtime.block_on(async {
        let mut work = commands::dispatch_boxed(cli.command);
        tokio::select! {
            r = &mut work => r,
            sig = lifecycle::signal() => {
                pulsar_chaos::errln!("{sig}: stopping: healing faults and removing what this run created");
                // Let the command heal and tear down on its own path, then make sure.
                lifecycle::request_stop();
                let _ = tokio::time::timeout(lifecycle::STOP_GRACE, &mut work).await;
                lifecycle::cleanup_after_signal().await;
                Err(Error::Interrupted)
            }
        }
    });
    let code = match code {
        Ok(c) => c,
        Err(e) => {
            pulsar_chaos::errln!("error: {e}");
            e.exit_code()
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,pulsar_chaos=info",
        _ => "debug,pulsar_chaos=debug,hyper=info,bollard=info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(pulsar_chaos::term::Stderr)
        .with_target(false)
        .init();
}
