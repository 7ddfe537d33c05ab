"""agent/*, task/*, task-agent/* and participation-log/* routes."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.meta_schemas import (
    AgentCreate,
    AgentDelete,
    AgentList,
    AgentRef,
    AgentUpdate,
    ParticipationAppend,
    ParticipationList,
    TaskAgentLink,
    TaskAgentList,
    TaskAgentRef,
    TaskCreate,
    TaskDelete,
    TaskList,
    TaskRef,
    TaskUpdate,
)

OK = {"ok": True}


def agent_create(call: GuardedCall, body: AgentCreate) -> Any:
    return call.meta.agents.create(call.caller, body.fields())


def agent_get(call: GuardedCall, body: AgentRef) -> Any:
    return call.meta.agents.get(call.caller, body.agent_id)


def agent_update(call: GuardedCall, body: AgentUpdate) -> Any:
    return call.meta.agents.update(call.caller, body.agent_id, body.fields())


def agent_delete(call: GuardedCall, body: AgentDelete) -> Any:
    return call.meta.agents.delete(call.caller, body.agent_ids)


def agent_list(call: GuardedCall, body: AgentList) -> Any:
    owner = None
    if not body.team_id:
        owner = call.meta.users.resolve(call.caller.service_id, body.owner_user_id, body.owner_user_key)
    return call.meta.agents.list(call.caller, body.fields(), owner or body.owner_user_id, body.page())


def agent_archive(call: GuardedCall, body: AgentRef) -> Any:
    return call.meta.agents.archive(call.caller, body.agent_id)


def task_create(call: GuardedCall, body: TaskCreate) -> Any:
    return call.meta.tasks.create(call.caller, body.fields())


def task_get(call: GuardedCall, body: TaskRef) -> Any:
    return call.meta.tasks.get(call.caller, body.task_id)


def task_update(call: GuardedCall, body: TaskUpdate) -> Any:
    return call.meta.tasks.update(call.caller, body.task_id, body.fields())


def task_delete(call: GuardedCall, body: TaskDelete) -> Any:
    return call.meta.tasks.delete(call.caller, body.task_ids)


def task_list(call: GuardedCall, body: TaskList) -> Any:
    creator = body.creator_user_id
    if not creator and body.creator_user_key:
        creator = call.meta.users.resolve(call.caller.service_id, None, body.creator_user_key)
    return call.meta.tasks.list(call.caller, body.fields(), creator, body.page())


def task_archive(call: GuardedCall, body: TaskRef) -> Any:
    return call.meta.tasks.archive(call.caller, body.task_id)


def link(call: GuardedCall, body: TaskAgentLink) -> Any:
    return call.meta.tasks.link(call.caller, body.task_id, body.agent_id, body.role_in_task)


def unlink(call: GuardedCall, body: TaskAgentRef) -> Any:
    call.meta.tasks.unlink(call.caller, body.task_id, body.agent_id)
    return OK


def links(call: GuardedCall, body: TaskAgentList) -> Any:
    return call.meta.tasks.list_links(call.caller, body.task_id, body.page())


def participation_append(call: GuardedCall, body: ParticipationAppend) -> Any:
    return call.meta.tasks.append_participation(call.caller, body.fields())


def participation_list(call: GuardedCall, body: ParticipationList) -> Any:
    return call.meta.tasks.list_participation(call.caller, body.fields(), body.page())


ROUTES = [
    GuardedRoute("agent/create", AgentCreate, agent_create, summary="Create an agent (and its chat-memory asset)"),
    GuardedRoute("agent/get", AgentRef, agent_get, summary="Get an agent"),
    GuardedRoute("agent/update", AgentUpdate, agent_update, summary="Update an agent (owner)"),
    GuardedRoute("agent/delete", AgentDelete, agent_delete, summary="Delete agents (owner)"),
    GuardedRoute("agent/list", AgentList, agent_list, summary="List agents by team or owner"),
    GuardedRoute("agent/archive", AgentRef, agent_archive, summary="Archive an agent"),
    GuardedRoute("task/create", TaskCreate, task_create, summary="Create a task"),
    GuardedRoute("task/get", TaskRef, task_get, summary="Get a task"),
    GuardedRoute("task/update", TaskUpdate, task_update, summary="Update a task (creator)"),
    GuardedRoute("task/delete", TaskDelete, task_delete, summary="Delete tasks (creator)"),
    GuardedRoute("task/list", TaskList, task_list, summary="List tasks by team or creator"),
    GuardedRoute("task/archive", TaskRef, task_archive, summary="Complete a task"),
    GuardedRoute("task-agent/link", TaskAgentLink, link, summary="Link an agent to a task"),
    GuardedRoute("task-agent/unlink", TaskAgentRef, unlink, summary="Unlink an agent from a task"),
    GuardedRoute("task-agent/list", TaskAgentList, links, summary="Agents linked to a task"),
    GuardedRoute("participation-log/append", ParticipationAppend, participation_append, summary="Log participation"),
    GuardedRoute("participation-log/list", ParticipationList, participation_list, summary="List participation"),
]
