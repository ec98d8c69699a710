"""The API's models. Generated from paddockd's OpenAPI document by appliance/openapi; do not edit.
Regenerate: go test ./appliance/server -run TestSDKModels -update
"""

from typing import Any, Dict, List, Optional, TypedDict

__all__ = ["Agent", "ApplyRequest", "ApplyResult", "AttrChange", "AuditBreak", "AuditCheck", "AuditEntry", "AuditMark", "Box", "BoxAgent", "BoxMetrics", "BoxPost", "BoxSpec", "BrokerUse", "BucketMount", "BuildEvent", "Change", "CodeContext", "ContextPost", "DNSDecision", "DesktopAction", "DesktopActionResult", "DesktopActionsPost", "DesktopActionsResult", "DesktopTicket", "DesktopWindow", "DeviceCode", "DevicePost", "DeviceToken", "DeviceTokenPost", "Dir", "DirEntry", "Drained", "Drive", "DrivePost", "DriveSpec", "Error", "ExecPost", "ForkPost", "Grant", "GrantPut", "Group", "GroupMember", "Image", "ImageShares", "ImageSpec", "Invite", "InviteCreated", "InvitePost", "Job", "JobInput", "Key", "KeyPost", "LostBox", "Mount", "MovePost", "MovedBox", "Node", "NodeJoin", "NodeLabels", "NodeLost", "NodePool", "Plan", "PlanRequest", "Policy", "PolicyPut", "PolicyReport", "PolicySpec", "Port", "Project", "ProjectSpec", "PromptPost", "PushSpec", "QuotaLimits", "QuotaPut", "QuotaUse", "ReconcileResult", "RestorePost", "RunError", "RunPost", "RunResult", "Sample", "Screenshot", "Secret", "SecretBroker", "SecretSpec", "SetupPost", "SignInLink", "SignInPost", "SignalPost", "Snapshot", "TTLPut", "TokenCreated", "TokenInfo", "TokenPost", "User", "UserQuota", "WatchEvent", "Whoami"]


_AgentRequired = TypedDict("_AgentRequired", {"command": "Optional[List[str]]", "name": "str"})
_AgentOptional = TypedDict("_AgentOptional", {"required": "Optional[List[str]]", "secrets": "Optional[List[str]]"}, total=False)


class Agent(_AgentRequired, _AgentOptional):
    pass


_ApplyRequestRequired = TypedDict("_ApplyRequestRequired", {"serial": "int", "spec": "ProjectSpec"})
_ApplyRequestOptional = TypedDict("_ApplyRequestOptional", {"destroy": "bool", "drives": "bool"}, total=False)


class ApplyRequest(_ApplyRequestRequired, _ApplyRequestOptional):
    pass


_ApplyResultRequired = TypedDict("_ApplyResultRequired", {"done": "Optional[List[str]]", "plan": "Plan", "serial": "int"})
_ApplyResultOptional = TypedDict("_ApplyResultOptional", {"failed": "Optional[Dict[str, str]]", "setup": "Optional[List[str]]"}, total=False)


class ApplyResult(_ApplyResultRequired, _ApplyResultOptional):
    pass


_AttrChangeRequired = TypedDict("_AttrChangeRequired", {"name": "str"})
_AttrChangeOptional = TypedDict("_AttrChangeOptional", {"after": "str", "before": "str", "forces": "bool"}, total=False)


class AttrChange(_AttrChangeRequired, _AttrChangeOptional):
    pass


AuditBreak = TypedDict("AuditBreak", {"reason": "str", "seq": "int"})


_AuditCheckRequired = TypedDict("_AuditCheckRequired", {"entries": "int", "first": "int", "last": "int", "ok": "bool"})
_AuditCheckOptional = TypedDict("_AuditCheckOptional", {"broken": "AuditBreak", "head": "AuditMark", "witnesses": "Optional[List[str]]"}, total=False)


class AuditCheck(_AuditCheckRequired, _AuditCheckOptional):
    pass


_AuditEntryRequired = TypedDict("_AuditEntryRequired", {"action": "str", "at": "str", "hash": "str", "prev": "str", "result": "str", "seq": "int"})
_AuditEntryOptional = TypedDict("_AuditEntryOptional", {"addr": "str", "agent": "str", "box": "str", "box_owner": "str", "detail": "Any", "object": "str", "user": "str", "via": "str"}, total=False)


class AuditEntry(_AuditEntryRequired, _AuditEntryOptional):
    pass


AuditMark = TypedDict("AuditMark", {"hash": "str", "seq": "int"})


_BoxRequired = TypedDict("_BoxRequired", {"cpus": "float", "created": "str", "desired": "str", "image": "str", "memory_mib": "int", "name": "str", "status": "str", "type": "str"})
_BoxOptional = TypedDict("_BoxOptional", {"access": "str", "agent": "str", "broker": "Optional[List[BrokerUse]]", "buckets": "Optional[List[BucketMount]]", "desktop": "bool", "desktop_state": "str", "docker": "str", "env": "Optional[Dict[str, str]]", "error": "str", "expires_at": "str", "from": "str", "idle_stop": "str", "ip": "str", "labels": "Optional[Dict[str, str]]", "mounts": "Optional[List[Mount]]", "node": "str", "node_labels": "Optional[Dict[str, str]]", "note": "str", "oom_at": "str", "oom_kills": "int", "owner": "str", "policy": "str", "project": "str", "setup": "str", "sleeping": "bool", "ttl_seconds": "int"}, total=False)


class Box(_BoxRequired, _BoxOptional):
    pass


_BoxAgentRequired = TypedDict("_BoxAgentRequired", {"credentials": "str", "installed": "bool", "name": "str"})
_BoxAgentOptional = TypedDict("_BoxAgentOptional", {"hint": "str", "missing": "Optional[List[str]]"}, total=False)


class BoxAgent(_BoxAgentRequired, _BoxAgentOptional):
    pass


BoxMetrics = TypedDict("BoxMetrics", {"box": "str", "interval": "str", "samples": "Optional[List[Sample]]"})


BoxPost = TypedDict("BoxPost", {"buckets": "Optional[List[BucketMount]]", "desktop": "bool", "env": "Optional[Dict[str, str]]", "idle_stop": "str", "image": "str", "labels": "Optional[Dict[str, str]]", "mounts": "Optional[List[Mount]]", "name": "str", "node": "str", "node_labels": "Optional[Dict[str, str]]", "policy": "str", "ttl": "str", "type": "str"}, total=False)


_BoxSpecRequired = TypedDict("_BoxSpecRequired", {"name": "str"})
_BoxSpecOptional = TypedDict("_BoxSpecOptional", {"agent": "str", "buckets": "Optional[List[BucketMount]]", "desktop": "bool", "env": "Optional[Dict[str, str]]", "idle_stop": "str", "image": "str", "labels": "Optional[Dict[str, str]]", "mounts": "Optional[List[Mount]]", "node_labels": "Optional[Dict[str, str]]", "policy": "str", "push": "Optional[List[PushSpec]]", "setup": "Optional[List[str]]", "ttl": "str", "type": "str"}, total=False)


class BoxSpec(_BoxSpecRequired, _BoxSpecOptional):
    pass


_BrokerUseRequired = TypedDict("_BrokerUseRequired", {"bytes_down": "int", "bytes_up": "int", "refused": "int", "requests": "int", "secret": "str"})
_BrokerUseOptional = TypedDict("_BrokerUseOptional", {"last": "str", "last_status": "int", "status": "Optional[Dict[str, int]]"}, total=False)


class BrokerUse(_BrokerUseRequired, _BrokerUseOptional):
    pass


_BucketMountRequired = TypedDict("_BucketMountRequired", {"secret": "str", "to": "str", "url": "str"})
_BucketMountOptional = TypedDict("_BucketMountOptional", {"endpoint": "str", "read_only": "bool", "region": "str"}, total=False)


class BucketMount(_BucketMountRequired, _BucketMountOptional):
    pass


_BuildEventRequired = TypedDict("_BuildEventRequired", {"type": "str"})
_BuildEventOptional = TypedDict("_BuildEventOptional", {"code": "str", "image": "Image", "message": "str", "text": "str"}, total=False)


class BuildEvent(_BuildEventRequired, _BuildEventOptional):
    pass


_ChangeRequired = TypedDict("_ChangeRequired", {"action": "str", "address": "str"})
_ChangeOptional = TypedDict("_ChangeOptional", {"attrs": "Optional[List[AttrChange]]", "reasons": "Optional[List[str]]"}, total=False)


class Change(_ChangeRequired, _ChangeOptional):
    pass


CodeContext = TypedDict("CodeContext", {"kernel": "str", "lang": "str", "name": "str", "started": "str", "state": "str"})


ContextPost = TypedDict("ContextPost", {"lang": "str", "name": "str"}, total=False)


DNSDecision = TypedDict("DNSDecision", {"allowed": "bool", "name": "str", "reason": "str", "time": "str"})


_DesktopActionRequired = TypedDict("_DesktopActionRequired", {"action": "str"})
_DesktopActionOptional = TypedDict("_DesktopActionOptional", {"coordinate": "Optional[List[int]]", "duration": "float", "region": "Optional[List[int]]", "scroll_amount": "int", "scroll_direction": "str", "start_coordinate": "Optional[List[int]]", "target": "str", "text": "str"}, total=False)


class DesktopAction(_DesktopActionRequired, _DesktopActionOptional):
    pass


_DesktopActionResultRequired = TypedDict("_DesktopActionResultRequired", {"action": "str"})
_DesktopActionResultOptional = TypedDict("_DesktopActionResultOptional", {"coordinate": "Optional[List[int]]", "idle": "bool", "image": "str", "windows": "Optional[List[DesktopWindow]]"}, total=False)


class DesktopActionResult(_DesktopActionResultRequired, _DesktopActionResultOptional):
    pass


_DesktopActionsPostRequired = TypedDict("_DesktopActionsPostRequired", {"actions": "Optional[List[DesktopAction]]"})
_DesktopActionsPostOptional = TypedDict("_DesktopActionsPostOptional", {"scale": "float", "screenshot": "bool"}, total=False)


class DesktopActionsPost(_DesktopActionsPostRequired, _DesktopActionsPostOptional):
    pass


_DesktopActionsResultRequired = TypedDict("_DesktopActionsResultRequired", {"height": "int", "results": "Optional[List[DesktopActionResult]]", "width": "int"})
_DesktopActionsResultOptional = TypedDict("_DesktopActionsResultOptional", {"screenshot": "str"}, total=False)


class DesktopActionsResult(_DesktopActionsResultRequired, _DesktopActionsResultOptional):
    pass


_DesktopTicketRequired = TypedDict("_DesktopTicketRequired", {"expires": "str", "path": "str", "ticket": "str"})
_DesktopTicketOptional = TypedDict("_DesktopTicketOptional", {"view_only": "bool"}, total=False)


class DesktopTicket(_DesktopTicketRequired, _DesktopTicketOptional):
    pass


_DesktopWindowRequired = TypedDict("_DesktopWindowRequired", {"height": "int", "id": "str", "title": "str", "width": "int", "x": "int", "y": "int"})
_DesktopWindowOptional = TypedDict("_DesktopWindowOptional", {"active": "bool"}, total=False)


class DesktopWindow(_DesktopWindowRequired, _DesktopWindowOptional):
    pass


DeviceCode = TypedDict("DeviceCode", {"device_code": "str", "expires_in": "int", "interval": "int", "user_code": "str", "verification_uri": "str", "verification_uri_complete": "str"})


DevicePost = TypedDict("DevicePost", {"name": "str"}, total=False)


DeviceToken = TypedDict("DeviceToken", {"token": "str"})


DeviceTokenPost = TypedDict("DeviceTokenPost", {"device_code": "str"})


_DirRequired = TypedDict("_DirRequired", {"entries": "Optional[List[DirEntry]]", "path": "str"})
_DirOptional = TypedDict("_DirOptional", {"truncated": "bool"}, total=False)


class Dir(_DirRequired, _DirOptional):
    pass


_DirEntryRequired = TypedDict("_DirEntryRequired", {"modified": "str", "name": "str", "size": "int", "type": "str"})
_DirEntryOptional = TypedDict("_DirEntryOptional", {"target": "str"}, total=False)


class DirEntry(_DirEntryRequired, _DirEntryOptional):
    pass


Drained = TypedDict("Drained", {"moved": "Optional[List[MovedBox]]", "node": "str"})


_DriveRequired = TypedDict("_DriveRequired", {"created": "str", "name": "str", "state": "str"})
_DriveOptional = TypedDict("_DriveOptional", {"labels": "Optional[Dict[str, str]]", "node": "str", "project": "str", "size": "str", "used_by": "Optional[List[str]]"}, total=False)


class Drive(_DriveRequired, _DriveOptional):
    pass


DrivePost = TypedDict("DrivePost", {"name": "str"})


_DriveSpecRequired = TypedDict("_DriveSpecRequired", {"name": "str"})
_DriveSpecOptional = TypedDict("_DriveSpecOptional", {"labels": "Optional[Dict[str, str]]", "size": "str"}, total=False)


class DriveSpec(_DriveSpecRequired, _DriveSpecOptional):
    pass


_ErrorRequired = TypedDict("_ErrorRequired", {"error": "str", "message": "str"})
_ErrorOptional = TypedDict("_ErrorOptional", {"field": "str"}, total=False)


class Error(_ErrorRequired, _ErrorOptional):
    pass


_ExecPostRequired = TypedDict("_ExecPostRequired", {"cmd": "Optional[List[str]]"})
_ExecPostOptional = TypedDict("_ExecPostOptional", {"cols": "int", "desktop": "bool", "env": "Optional[Dict[str, str]]", "rows": "int", "stdin": "bool", "timeout": "str", "tty": "bool", "workdir": "str"}, total=False)


class ExecPost(_ExecPostRequired, _ExecPostOptional):
    pass


ForkPost = TypedDict("ForkPost", {"name": "str", "node": "str", "snapshot": "str"}, total=False)


Grant = TypedDict("Grant", {"access": "str", "user": "str"})


GrantPut = TypedDict("GrantPut", {"access": "str"}, total=False)


Group = TypedDict("Group", {"members": "Optional[List[GroupMember]]", "name": "str", "quota": "QuotaPut"})


GroupMember = TypedDict("GroupMember", {"source": "str", "user": "str"})


_ImageRequired = TypedDict("_ImageRequired", {"bases": "Optional[List[str]]", "build_seconds": "float", "built": "str", "context_digest": "str", "dockerfile": "str", "id": "str", "mine": "bool", "name": "str", "owner": "str", "ref": "str", "shared_with": "Optional[List[str]]", "size": "int"})
_ImageOptional = TypedDict("_ImageOptional", {"cached": "bool", "project": "str"}, total=False)


class Image(_ImageRequired, _ImageOptional):
    pass


ImageShares = TypedDict("ImageShares", {"everyone": "bool", "groups": "Optional[List[str]]", "users": "Optional[List[str]]"})


_ImageSpecRequired = TypedDict("_ImageSpecRequired", {"context": "str", "dockerfile": "str", "name": "str", "tag": "str"})
_ImageSpecOptional = TypedDict("_ImageSpecOptional", {"context_digest": "str", "policy": "str"}, total=False)


class ImageSpec(_ImageSpecRequired, _ImageSpecOptional):
    pass


_InviteRequired = TypedDict("_InviteRequired", {"created": "str", "expires": "str", "id": "str", "role": "str"})
_InviteOptional = TypedDict("_InviteOptional", {"by": "str"}, total=False)


class Invite(_InviteRequired, _InviteOptional):
    pass


_InviteCreatedRequired = TypedDict("_InviteCreatedRequired", {"expires": "str", "id": "str", "role": "str", "token": "str"})
_InviteCreatedOptional = TypedDict("_InviteCreatedOptional", {"url": "str"}, total=False)


class InviteCreated(_InviteCreatedRequired, _InviteCreatedOptional):
    pass


InvitePost = TypedDict("InvitePost", {"role": "str"}, total=False)


_JobRequired = TypedDict("_JobRequired", {"box": "str", "cmd": "Optional[List[str]]", "id": "str", "started": "str", "state": "str"})
_JobOptional = TypedDict("_JobOptional", {"ended": "str", "exit_code": "int"}, total=False)


class Job(_JobRequired, _JobOptional):
    pass


JobInput = TypedDict("JobInput", {"bytes": "int", "closed": "bool"})


Key = TypedDict("Key", {"created": "str", "fingerprint": "str", "name": "str", "type": "str"})


_KeyPostRequired = TypedDict("_KeyPostRequired", {"key": "str"})
_KeyPostOptional = TypedDict("_KeyPostOptional", {"name": "str"}, total=False)


class KeyPost(_KeyPostRequired, _KeyPostOptional):
    pass


_LostBoxRequired = TypedDict("_LostBoxRequired", {"box": "str", "lost": "str", "to": "str"})
_LostBoxOptional = TypedDict("_LostBoxOptional", {"from": "str", "taken": "str"}, total=False)


class LostBox(_LostBoxRequired, _LostBoxOptional):
    pass


_MountRequired = TypedDict("_MountRequired", {"drive": "str", "path": "str"})
_MountOptional = TypedDict("_MountOptional", {"readonly": "bool"}, total=False)


class Mount(_MountRequired, _MountOptional):
    pass


_MovePostRequired = TypedDict("_MovePostRequired", {"node": "str"})
_MovePostOptional = TypedDict("_MovePostOptional", {"from_store": "bool", "with": "Optional[List[str]]"}, total=False)


class MovePost(_MovePostRequired, _MovePostOptional):
    pass


_MovedBoxRequired = TypedDict("_MovedBoxRequired", {"to": "str"})
_MovedBoxOptional = TypedDict("_MovedBoxOptional", {"box": "str", "drive": "str"}, total=False)


class MovedBox(_MovedBoxRequired, _MovedBoxOptional):
    pass


_NodeRequired = TypedDict("_NodeRequired", {"boxes": "int", "drives": "int", "labels": "Optional[Dict[str, str]]", "name": "str", "pool": "int", "state": "str", "subnet": "str"})
_NodeOptional = TypedDict("_NodeOptional", {"addr": "str", "control_plane": "bool", "cpus": "int", "disk_bytes": "int", "disk_free": "int", "drained": "bool", "error": "str", "joined": "str", "memory_bytes": "int", "memory_free": "int", "own_pool": "Optional[Dict[str, int]]", "routes": "Optional[List[str]]", "swarm_id": "str", "swarm_state": "str"}, total=False)


class Node(_NodeRequired, _NodeOptional):
    pass


NodeJoin = TypedDict("NodeJoin", {"ca_sha256": "str", "command": "str", "expires_at": "str", "token": "str"})


NodeLabels = TypedDict("NodeLabels", {"labels": "Optional[Dict[str, str]]"})


NodeLost = TypedDict("NodeLost", {"boxes": "Optional[List[LostBox]]", "drives": "Optional[List[MovedBox]]", "node": "str", "snapshots": "Optional[List[str]]"})


NodePool = TypedDict("NodePool", {"pool": "Optional[Dict[str, int]]"})


_PlanRequired = TypedDict("_PlanRequired", {"changes": "Optional[List[Change]]", "project": "str", "serial": "int"})
_PlanOptional = TypedDict("_PlanOptional", {"notes": "Optional[List[str]]"}, total=False)


class Plan(_PlanRequired, _PlanOptional):
    pass


_PlanRequestRequired = TypedDict("_PlanRequestRequired", {"spec": "ProjectSpec"})
_PlanRequestOptional = TypedDict("_PlanRequestOptional", {"destroy": "bool", "drives": "bool"}, total=False)


class PlanRequest(_PlanRequestRequired, _PlanRequestOptional):
    pass


_PolicyRequired = TypedDict("_PolicyRequired", {"name": "str"})
_PolicyOptional = TypedDict("_PolicyOptional", {"allow_cidrs": "Optional[List[str]]", "allow_domains": "Optional[List[str]]", "project": "str", "used_by": "Optional[List[str]]"}, total=False)


class Policy(_PolicyRequired, _PolicyOptional):
    pass


PolicyPut = TypedDict("PolicyPut", {"policy": "str"})


PolicyReport = TypedDict("PolicyReport", {"box": "str", "dns": "Optional[List[DNSDecision]]", "drops": "Optional[Dict[str, int]]", "policy": "str"})


_PolicySpecRequired = TypedDict("_PolicySpecRequired", {"name": "str"})
_PolicySpecOptional = TypedDict("_PolicySpecOptional", {"allow_cidrs": "Optional[List[str]]", "allow_domains": "Optional[List[str]]"}, total=False)


class PolicySpec(_PolicySpecRequired, _PolicySpecOptional):
    pass


_PortRequired = TypedDict("_PortRequired", {"address": "str", "port": "int"})
_PortOptional = TypedDict("_PortOptional", {"note": "str", "url": "str"}, total=False)


class Port(_PortRequired, _PortOptional):
    pass


_ProjectRequired = TypedDict("_ProjectRequired", {"boxes": "Optional[List[str]]", "drives": "Optional[List[str]]", "name": "str", "policies": "Optional[List[str]]"})
_ProjectOptional = TypedDict("_ProjectOptional", {"applied_at": "str", "applied_by": "str", "drift": "Optional[List[Change]]", "drift_error": "str", "owner": "str", "serial": "int"}, total=False)


class Project(_ProjectRequired, _ProjectOptional):
    pass


_ProjectSpecRequired = TypedDict("_ProjectSpecRequired", {"project": "str"})
_ProjectSpecOptional = TypedDict("_ProjectSpecOptional", {"boxes": "Optional[List[BoxSpec]]", "drives": "Optional[List[DriveSpec]]", "images": "Optional[List[ImageSpec]]", "policies": "Optional[List[PolicySpec]]", "secrets": "Optional[List[SecretSpec]]"}, total=False)


class ProjectSpec(_ProjectSpecRequired, _ProjectSpecOptional):
    pass


_PromptPostRequired = TypedDict("_PromptPostRequired", {"task": "str"})
_PromptPostOptional = TypedDict("_PromptPostOptional", {"agent": "str", "workdir": "str"}, total=False)


class PromptPost(_PromptPostRequired, _PromptPostOptional):
    pass


PushSpec = TypedDict("PushSpec", {"local": "str", "to": "str"})


QuotaLimits = TypedDict("QuotaLimits", {"boxes": "int", "drive_gib": "float", "drives": "int", "jobs": "int", "running": "int", "types": "Optional[List[str]]"})


QuotaPut = TypedDict("QuotaPut", {"boxes": "int", "default": "Optional[List[str]]", "drive_gib": "float", "drives": "int", "jobs": "int", "running": "int", "types": "Optional[List[str]]"}, total=False)


QuotaUse = TypedDict("QuotaUse", {"boxes": "int", "drives": "int", "jobs": "int", "running": "int"})


_ReconcileResultRequired = TypedDict("_ReconcileResultRequired", {"changes": "Optional[List[str]]"})
_ReconcileResultOptional = TypedDict("_ReconcileResultOptional", {"errors": "Optional[Dict[str, str]]"}, total=False)


class ReconcileResult(_ReconcileResultRequired, _ReconcileResultOptional):
    pass


RestorePost = TypedDict("RestorePost", {"snapshot": "str"}, total=False)


RunError = TypedDict("RunError", {"name": "str", "traceback": "Optional[List[str]]", "value": "str"})


_RunPostRequired = TypedDict("_RunPostRequired", {"code": "str"})
_RunPostOptional = TypedDict("_RunPostOptional", {"context": "str", "lang": "str", "timeout": "str"}, total=False)


class RunPost(_RunPostRequired, _RunPostOptional):
    pass


_RunResultRequired = TypedDict("_RunResultRequired", {"context": "str", "execution_count": "int", "lang": "str", "stderr": "str", "stdout": "str"})
_RunResultOptional = TypedDict("_RunResultOptional", {"display": "Optional[List[Optional[Dict[str, Any]]]]", "error": "RunError", "result": "Optional[Dict[str, Any]]", "started": "bool", "timed_out": "bool"}, total=False)


class RunResult(_RunResultRequired, _RunResultOptional):
    pass


Sample = TypedDict("Sample", {"at": "str", "box": "str", "cpu_percent": "float", "disk_bytes": "int", "disk_limit_bytes": "int", "memory_bytes": "int", "memory_limit_bytes": "int", "net_rx_bytes": "int", "net_rx_rate": "float", "net_tx_bytes": "int", "net_tx_rate": "float", "processes": "int"})


Screenshot = TypedDict("Screenshot", {"id": "str", "size": "int", "taken": "str"})


_SecretRequired = TypedDict("_SecretRequired", {"mine": "bool", "name": "str", "shared": "bool", "updated": "str"})
_SecretOptional = TypedDict("_SecretOptional", {"broker": "SecretBroker"}, total=False)


class Secret(_SecretRequired, _SecretOptional):
    pass


_SecretBrokerRequired = TypedDict("_SecretBrokerRequired", {"header": "str", "hosts": "Optional[List[str]]"})
_SecretBrokerOptional = TypedDict("_SecretBrokerOptional", {"limit": "str"}, total=False)


class SecretBroker(_SecretBrokerRequired, _SecretBrokerOptional):
    pass


SecretSpec = TypedDict("SecretSpec", {"broker": "SecretBroker", "name": "str"})


_SetupPostRequired = TypedDict("_SetupPostRequired", {"ok": "bool"})
_SetupPostOptional = TypedDict("_SetupPostOptional", {"error": "str"}, total=False)


class SetupPost(_SetupPostRequired, _SetupPostOptional):
    pass


SignInLink = TypedDict("SignInLink", {"expires": "str", "url": "str"})


SignInPost = TypedDict("SignInPost", {"box": "str", "port": "int"}, total=False)


SignalPost = TypedDict("SignalPost", {"signal": "str"}, total=False)


_SnapshotRequired = TypedDict("_SnapshotRequired", {"box": "str", "created": "str", "id": "str", "reason": "str", "state": "str"})
_SnapshotOptional = TypedDict("_SnapshotOptional", {"error": "str", "ship_error": "str", "shipped": "str", "size": "int"}, total=False)


class Snapshot(_SnapshotRequired, _SnapshotOptional):
    pass


TTLPut = TypedDict("TTLPut", {"ttl": "str"})


TokenCreated = TypedDict("TokenCreated", {"name": "str", "token": "str"})


TokenInfo = TypedDict("TokenInfo", {"created": "str", "name": "str"})


_TokenPostRequired = TypedDict("_TokenPostRequired", {"name": "str"})
_TokenPostOptional = TypedDict("_TokenPostOptional", {"e2b": "bool"}, total=False)


class TokenPost(_TokenPostRequired, _TokenPostOptional):
    pass


_UserRequired = TypedDict("_UserRequired", {"created": "str", "name": "str", "role": "str"})
_UserOptional = TypedDict("_UserOptional", {"email": "str", "password": "bool", "sso": "str"}, total=False)


class User(_UserRequired, _UserOptional):
    pass


_UserQuotaRequired = TypedDict("_UserQuotaRequired", {"limits": "QuotaLimits", "own": "Optional[List[str]]", "role": "str", "use": "QuotaUse", "user": "str"})
_UserQuotaOptional = TypedDict("_UserQuotaOptional", {"groups": "Optional[Dict[str, str]]"}, total=False)


class UserQuota(_UserQuotaRequired, _UserQuotaOptional):
    pass


_WatchEventRequired = TypedDict("_WatchEventRequired", {"type": "str"})
_WatchEventOptional = TypedDict("_WatchEventOptional", {"count": "int", "errno": "str", "from": "str", "kind": "str", "message": "str", "path": "str", "size": "int", "time": "str", "watches": "int"}, total=False)


class WatchEvent(_WatchEventRequired, _WatchEventOptional):
    pass


_WhoamiRequired = TypedDict("_WhoamiRequired", {"role": "str", "server": "str", "token": "str", "user": "str", "version": "str"})
_WhoamiOptional = TypedDict("_WhoamiOptional", {"images": "Optional[List[str]]", "ssh_host_key": "str", "ssh_port": "int"}, total=False)


class Whoami(_WhoamiRequired, _WhoamiOptional):
    pass
