# LCM operation user data of the kubeadm-kuryr sample: seed 001's request
# names it ("lcm-operation-user-data": "UserData/base_user_data.py",
# "lcm-operation-user-data-class": "BaseUserData").
#
# mini-VNFM never imports or runs this file. The class name selects the
# VNFM's built-in equivalent (internal/userdata): the base HOT's parameters
# computed from the VNFD, the instantiation level and the request (flavours,
# images, networks, CP addresses, desired capacities, and the additionalParams
# keys named like top-level template parameters). The file is here so that
# the package keeps the layout Tacker expects, and for Tacker, which does
# run it, it computes the same parameters with Tacker's own utilities.
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
import tacker.vnfm.lcm_user_data.utils as user_data_utils


class BaseUserData(AbstractUserData):
    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        api_param = user_data_utils.get_diff_base_hot_param_from_api(
            base_hot_dict, inst_req_info)
        initial_param_dict = user_data_utils.create_initial_param_dict(
            base_hot_dict)
        vdu_flavor_dict = user_data_utils.create_vdu_flavor_dict(vnfd_dict)
        vdu_image_dict = user_data_utils.create_vdu_image_dict(grant_info)
        cpd_vl_dict = user_data_utils.create_network_dict(
            inst_req_info, initial_param_dict)
        final_param_dict = user_data_utils.create_final_param_dict(
            initial_param_dict, vdu_flavor_dict, vdu_image_dict, cpd_vl_dict)
        desired_capacity_dict = user_data_utils.create_desired_capacity_dict(
            base_hot_dict, vnfd_dict, inst_req_info)
        final_param_dict.update(desired_capacity_dict)
        final_param_dict.update(api_param)
        return final_param_dict
