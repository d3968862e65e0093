import { createAgent } from "./createAgent.ts";
import { createDeveloperError } from "./createDeveloperError.ts";
import { createEvents } from "./createEvents.ts";
import { createEventsUnversioned } from "./createEventsUnversioned.ts";
import { createInvitation } from "./createInvitation.ts";
import { createKey } from "./createKey.ts";
import { createOtlpToken } from "./createOtlpToken.ts";
import { createProject } from "./createProject.ts";
import { createResetLink } from "./createResetLink.ts";
import { createScores } from "./createScores.ts";
import { createSession } from "./createSession.ts";
import { createSessionUnversioned } from "./createSessionUnversioned.ts";
import { createThread } from "./createThread.ts";
import { deleteScore } from "./deleteScore.ts";
import { deleteSession } from "./deleteSession.ts";
import { deleteSessions } from "./deleteSessions.ts";
import { exportAudit } from "./exportAudit.ts";
import { exportLogs } from "./exportLogs.ts";
import { exportMetrics } from "./exportMetrics.ts";
import { exportSession } from "./exportSession.ts";
import { exportSessions } from "./exportSessions.ts";
import { exportTraces } from "./exportTraces.ts";
import { exportTracesSlash } from "./exportTracesSlash.ts";
import { finishOidc } from "./finishOidc.ts";
import { getAnalyticsBreakdown } from "./getAnalyticsBreakdown.ts";
import { getAnalyticsTimeseries } from "./getAnalyticsTimeseries.ts";
import { getHealth } from "./getHealth.ts";
import { getHealthAlias } from "./getHealthAlias.ts";
import { getMe } from "./getMe.ts";
import { getMetrics } from "./getMetrics.ts";
import { getOpenapiSpec } from "./getOpenapiSpec.ts";
import { getReadiness } from "./getReadiness.ts";
import { getScore } from "./getScore.ts";
import { getScoreBreakdown } from "./getScoreBreakdown.ts";
import { getScoreTimeseries } from "./getScoreTimeseries.ts";
import { getSession } from "./getSession.ts";
import { getSessionLogs } from "./getSessionLogs.ts";
import { getSessionStats } from "./getSessionStats.ts";
import { getUiAsset } from "./getUiAsset.ts";
import { getUiDrilldownRedirect } from "./getUiDrilldownRedirect.ts";
import { getUiHome } from "./getUiHome.ts";
import { getUiSession } from "./getUiSession.ts";
import { getUiSessions } from "./getUiSessions.ts";
import { listAudit } from "./listAudit.ts";
import { listKeys } from "./listKeys.ts";
import { listMembers } from "./listMembers.ts";
import { listProjects } from "./listProjects.ts";
import { listScoreConfigs } from "./listScoreConfigs.ts";
import { listScores } from "./listScores.ts";
import { listSessionEvents } from "./listSessionEvents.ts";
import { listSessions } from "./listSessions.ts";
import { listSignInMethods } from "./listSignInMethods.ts";
import { logIn } from "./logIn.ts";
import { logOut } from "./logOut.ts";
import { logOutEverywhere } from "./logOutEverywhere.ts";
import { putScoreConfig } from "./putScoreConfig.ts";
import { reauthorizeJwt } from "./reauthorizeJwt.ts";
import { removeMember } from "./removeMember.ts";
import { resetPassword } from "./resetPassword.ts";
import { revokeKey } from "./revokeKey.ts";
import { setMember } from "./setMember.ts";
import { setProjectRetention } from "./setProjectRetention.ts";
import { setUserDisabled } from "./setUserDisabled.ts";
import { signUp } from "./signUp.ts";
import { startOidc } from "./startOidc.ts";
import type { Deps, Handlers } from "./types.ts";
import { updateEvents } from "./updateEvents.ts";
import { updateScore } from "./updateScore.ts";
import { updateSession } from "./updateSession.ts";
import { uploadLogs } from "./uploadLogs.ts";

/** One handler per operationId of openapi.yaml; `satisfies` makes a missing one a type error. */
export const createHandlers = (deps: Deps) =>
  ({
    createSession: createSession(deps),
    createSessionUnversioned: createSessionUnversioned(deps),
    updateSession: updateSession(deps),
    createEvents: createEvents(deps),
    createEventsUnversioned: createEventsUnversioned(deps),
    updateEvents: updateEvents(deps),
    createAgent: createAgent(deps),
    reauthorizeJwt: reauthorizeJwt(deps),
    getOpenapiSpec: getOpenapiSpec(deps),
    listSessions: listSessions(deps),
    getSession: getSession(deps),
    listSessionEvents: listSessionEvents(deps),
    getSessionStats: getSessionStats(deps),
    exportSession: exportSession(deps),
    exportSessions: exportSessions(deps),
    deleteSession: deleteSession(deps),
    deleteSessions: deleteSessions(deps),
    getAnalyticsTimeseries: getAnalyticsTimeseries(deps),
    getAnalyticsBreakdown: getAnalyticsBreakdown(deps),
    getScoreTimeseries: getScoreTimeseries(deps),
    getScoreBreakdown: getScoreBreakdown(deps),
    getHealth: getHealth(deps),
    getReadiness: getReadiness(deps),
    getMetrics: getMetrics(deps),
    getUiHome: getUiHome(deps),
    getUiSession: getUiSession(deps),
    getUiAsset: getUiAsset(deps),
    createOtlpToken: createOtlpToken(deps),
    exportLogs: exportLogs(deps),
    exportMetrics: exportMetrics(deps),
    exportTraces: exportTraces(deps),
    exportTracesSlash: exportTracesSlash(deps),
    getSessionLogs: getSessionLogs(deps),
    getUiSessions: getUiSessions(deps),
    uploadLogs: uploadLogs(deps),
    getHealthAlias: getHealthAlias(deps),
    createDeveloperError: createDeveloperError(deps),
    createThread: createThread(deps),
    getUiDrilldownRedirect: getUiDrilldownRedirect(deps),
    logIn: logIn(deps),
    signUp: signUp(deps),
    resetPassword: resetPassword(deps),
    logOut: logOut(deps),
    logOutEverywhere: logOutEverywhere(deps),
    getMe: getMe(deps),
    createInvitation: createInvitation(deps),
    createResetLink: createResetLink(deps),
    setUserDisabled: setUserDisabled(deps),
    listAudit: listAudit(deps),
    exportAudit: exportAudit(deps),
    listSignInMethods: listSignInMethods(deps),
    startOidc: startOidc(deps),
    finishOidc: finishOidc(deps),
    listProjects: listProjects(deps),
    createProject: createProject(deps),
    listKeys: listKeys(deps),
    createKey: createKey(deps),
    revokeKey: revokeKey(deps),
    listMembers: listMembers(deps),
    setMember: setMember(deps),
    removeMember: removeMember(deps),
    setProjectRetention: setProjectRetention(deps),
    createScores: createScores(deps),
    listScores: listScores(deps),
    getScore: getScore(deps),
    updateScore: updateScore(deps),
    deleteScore: deleteScore(deps),
    listScoreConfigs: listScoreConfigs(deps),
    putScoreConfig: putScoreConfig(deps),
  }) satisfies Handlers;
