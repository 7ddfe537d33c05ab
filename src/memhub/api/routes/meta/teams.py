"""team/* and team-member/* routes."""

from __future__ import annotations

from typing import Any

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
from memhub.api.metaplane import MetaCall, MetaRoute

OK = {"ok": True}


def create(call: MetaCall, body: TeamCreate) -> Any:
    return call.meta.teams.create(call.caller, body.fields())


def get(call: MetaCall, body: TeamRef) -> Any:
    return call.meta.teams.get(call.caller, body.team_id)


def update(call: MetaCall, body: TeamUpdate) -> Any:
    return call.meta.teams.update(call.caller, body.team_id, body.fields())


def delete(call: MetaCall, body: TeamDelete) -> Any:
    return call.meta.teams.delete(call.caller, body.team_ids)


def list_teams(call: MetaCall, body: TeamList) -> Any:
    user_id = call.meta.users.resolve(call.caller.service_id, body.user_id, body.user_key)
    return call.meta.teams.list(call.caller, user_id, body.name, body.page())


def member_add(call: MetaCall, body: MemberAdd) -> Any:
    return call.meta.teams.add_member(call.caller, body.fields())


def member_remove(call: MetaCall, body: MemberRef) -> Any:
    call.meta.teams.remove_member(call.caller, body.team_id, body.user_id)
    return OK


def member_list(call: MetaCall, body: MemberList) -> Any:
    return call.meta.teams.list_members(call.caller, body.team_id, body.page())


def member_get(call: MetaCall, body: MemberRef) -> Any:
    return call.meta.teams.get_member(call.caller, body.team_id, body.user_id)


ROUTES = [
    MetaRoute("team/create", TeamCreate, create, summary="Create a team (the caller owns it)"),
    MetaRoute("team/get", TeamRef, get, summary="Get a team"),
    MetaRoute("team/update", TeamUpdate, update, summary="Update a team"),
    MetaRoute("team/delete", TeamDelete, delete, summary="Delete teams and what hangs off them"),
    MetaRoute("team/list", TeamList, list_teams, summary="Teams a user belongs to"),
    MetaRoute("team-member/add", MemberAdd, member_add, summary="Add or update a member"),
    MetaRoute("team-member/remove", MemberRef, member_remove, summary="Remove a member"),
    MetaRoute("team-member/list", MemberList, member_list, summary="List active members"),
    MetaRoute("team-member/get", MemberRef, member_get, summary="Get a membership"),
]
