//! `sss __gen-docs`: man pages and shell completions from the command
//! line's own definition, for installers (`scripts/install.sh`).

use std::path::PathBuf;

use clap::CommandFactory;

/// Arguments of `sss __gen-docs`.
#[derive(Debug, clap::Args)]
pub struct GenDocsArgs {
    /// Directory for the man pages (`sss.1`, `sss-run.1`, …).
    #[arg(long)]
    man: Option<PathBuf>,
    /// Directory for the completions of bash, zsh and fish.
    #[arg(long)]
    completions: Option<PathBuf>,
}

/// Writes what was asked for.
pub fn run(a: GenDocsArgs) -> Result<(), String> {
    let cmd = crate::Cli::command();
    if let Some(dir) = &a.man {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        clap_mangen::generate_to(cmd.clone(), dir)
            .map_err(|e| format!("man pages in {}: {e}", dir.display()))?;
    }
    if let Some(dir) = &a.completions {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            clap_complete::generate_to(shell, &mut cmd.clone(), "sss", dir)
                .map_err(|e| format!("{shell} completion in {}: {e}", dir.display()))?;
        }
    }
    Ok(())
}
