"""team/* and team-member/* routes."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.meta_schemas import (
    MemberAdd,
    MemberList,
    MemberRef,
    TeamCreate,
    TeamDelete,
    TeamList,
    TeamRef,
    TeamUpdate,
)

OK = {"ok": True}


def create(call: GuardedCall, body: TeamCreate) -> Any:
    return call.meta.teams.create(call.caller, body.fields())


def get(call: GuardedCall, body: TeamRef) -> Any:
    return call.meta.teams.get(call.caller, body.team_id)


def update(call: GuardedCall, body: TeamUpdate) -> Any:
    return call.meta.teams.update(call.caller, body.team_id, body.fields())


def delete(call: GuardedCall, body: TeamDelete) -> Any:
    return call.meta.teams.delete(call.caller, body.team_ids)


def list_teams(call: GuardedCall, body: TeamList) -> Any:
    user_id = call.meta.users.resolve(call.caller.service_id, body.user_id, body.user_key)
    return call.meta.teams.list(call.caller, user_id, body.name, body.page())


def member_add(call: GuardedCall, body: MemberAdd) -> Any:
    return call.meta.teams.add_member(call.caller, body.fields())


def member_remove(call: GuardedCall, body: MemberRef) -> Any:
    call.meta.teams.remove_member(call.caller, body.team_id, body.user_id)
    return OK


def member_list(call: GuardedCall, body: MemberList) -> Any:
    return call.meta.teams.list_members(call.caller, body.team_id, body.page())


def member_get(call: GuardedCall, body: MemberRef) -> Any:
    return call.meta.teams.get_member(call.caller, body.team_id, body.user_id)


ROUTES = [
    GuardedRoute("team/create", TeamCreate, create, summary="Create a team (the caller owns it)"),
    GuardedRoute("team/get", TeamRef, get, summary="Get a team"),
    GuardedRoute("team/update", TeamUpdate, update, summary="Update a team"),
    GuardedRoute("team/delete", TeamDelete, delete, summary="Delete teams and what hangs off them"),
    GuardedRoute("team/list", TeamList, list_teams, summary="Teams a user belongs to"),
    GuardedRoute("team-member/add", MemberAdd, member_add, summary="Add or update a member"),
    GuardedRoute("team-member/remove", MemberRef, member_remove, summary="Remove a member"),
    GuardedRoute("team-member/list", MemberList, member_list, summary="List active members"),
    GuardedRoute("team-member/get", MemberRef, member_get, summary="Get a membership"),
]
