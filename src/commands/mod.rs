//! One function per sub-command; `main` calls [`dispatch_boxed`]. Each returns the exit code of a
//! completed command (verdict-bearing commands return 0, 1 or 4) or a typed error.

pub mod cluster;
pub mod matrix;
pub mod recheck;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod shrink;
pub mod soak;
pub mod trends;

use crate::cli::{ClusterCommand, Command, ImageCommand};
use crate::error::Result;

/// `dispatch`, boxed: the binary polls it through a pointer, so the whole program's future
/// is compiled once, in this library, and not again into `main.rs`'s crate (measured on 2
/// cores: the release build's binary unit took 45 s unboxed, 13 s boxed).
pub fn dispatch_boxed(
    cmd: Command,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<i32>>>> {
    Box::pin(dispatch(cmd))
}

pub async fn dispatch(cmd: Command) -> Result<i32> {
    match cmd {
        Command::Validate { scenario } => scenario::validate(&scenario),
        Command::Plan {
            scenario,
            seed,
            commands,
            adapter,
        } => scenario::plan(&scenario, seed, commands, adapter.as_deref()),
        Command::Cluster(ClusterCommand::Up(args)) => cluster::up(args).await,
        Command::Cluster(ClusterCommand::Status) => cluster::status().await,
        Command::Cluster(ClusterCommand::Down { run }) => cluster::down(run).await,
        Command::Image(ImageCommand::Build {
            force,
            pulsar_version,
        }) => cluster::image_build(&pulsar_version, force).await,
        Command::Image(ImageCommand::Show { pulsar_version }) => {
            cluster::image_show(&pulsar_version).await
        }
        Command::Clean { adapter: None, run } => cluster::clean(run.as_deref()).await,
        Command::Clean {
            adapter: Some(adapter),
            ..
        } => cluster::clean_adapter(&adapter).await,
        Command::Run(args) => run::run(args).await,
        Command::Verify(args) => run::verify(args).await,
        Command::Report { run_dir } => report::report(&run_dir),
        Command::Recheck { run_dir, json } => recheck::recheck(&run_dir, json),
        Command::Replay(args) => replay::replay(&args).await,
        Command::Soak(args) => soak::soak(args).await,
        Command::Shrink(args) => shrink::shrink(args).await,
        Command::Matrix(args) => matrix::matrix(args).await,
        Command::Trends(args) => trends::trends(args).await,
    }
}
