//! IDM queries: a node's status page and a task's scheduling state, as
//! the node daemon publishes them.

use super::{fill, guard, guard_value, null, obj};
use crate::handle::TaskObj;
use crate::status::{Failure, Status};

/// See `sss_idm_node` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_idm_node(
    task: *const TaskObj,
    node: *const std::ffi::c_char,
    info: *mut crate::types::NodeInfo,
) -> Status {
    guard(|| {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }?;
        if node.is_null() {
            return Err(null("node"));
        }
        // SAFETY: a NUL-terminated string per the header.
        let name = unsafe { std::ffi::CStr::from_ptr(node) }
            .to_str()
            .map_err(|_| Failure::invalid("node name is not UTF-8"))?;
        let page = || {
            let d = t.task().node_page(name).ok_or_else(|| {
                Failure::new(Status::NoMessage, "no daemon here, or unknown node")
            })?;
            Ok(crate::types::NodeInfo {
                field_mask: 0,
                name: d.name,
                up: d.is_up() as u32,
                ncpus: d.ncpus,
                runnable: d.runnable,
                ntasks: d.ntasks,
                load1000: d.load,
                reserved: 0,
                mem_total_kb: d.mem_total_kb,
                mem_free_kb: d.mem_free_kb,
                packets: d.packets,
                bytes: d.bytes,
                retransmissions: d.retransmissions,
                rejected: d.rejected,
                updated_ns: d.updated_ns,
            })
        };
        // SAFETY: null or the caller's struct holding the fields its mask
        // names (header contract).
        unsafe { fill(info, "info", page) }
    })
}

/// See `sss_idm_task_state` in `include/sss.h`.
///
/// # Safety
/// As documented in the header.
#[no_mangle]
pub unsafe extern "C" fn sss_idm_task_state(task: *const TaskObj, rank: u32) -> u32 {
    guard_value(0, || {
        // SAFETY: header contract for handles.
        let t = unsafe { obj(task, "task") }.ok()?;
        Some(t.task().task_state(rank) as u32)
    })
}
