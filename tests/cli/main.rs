//! End-to-end tests of the `crawlgate` binary's offline commands.

mod agents;
mod catalog;
mod golden;
mod ledger;
mod limits;
mod live;
mod offline;
mod robots;
mod tokens;
mod top;
mod verify;
